/**
 * The one way a script URL reaches the browser. The page enforces Trusted Types for scripts
 * (index.html), so the service worker and the web workers start only from a TrustedScriptURL,
 * and this policy makes one only for a script of the app's own origin outside /api/: no string
 * that came from data can ever be started as a script, and no default policy is needed.
 */

/** The parts of the Trusted Types API used here (not yet in TypeScript's DOM library). */
interface ScriptUrlPolicy {
  createScriptURL(url: string): unknown;
}
interface TrustedTypesFactory {
  createPolicy(name: string, rules: { createScriptURL(url: string): string }): ScriptUrlPolicy;
}

function ownScript(url: string): string {
  const parsed = new URL(url, location.href);
  if (parsed.origin !== location.origin || parsed.pathname === '/api' || parsed.pathname.startsWith('/api/')) {
    throw new TypeError(`not a script of this app: ${url}`);
  }
  return parsed.href;
}

const factory = (globalThis as { trustedTypes?: TrustedTypesFactory }).trustedTypes;
const policy = factory?.createPolicy('svc-scripts', { createScriptURL: ownScript });

/**
 * `url` as Worker and serviceWorker.register take it: a TrustedScriptURL where the browser has
 * Trusted Types (typed as a string, which those sinks also accept elsewhere).
 */
export function scriptUrl(url: string): string {
  return policy ? (policy.createScriptURL(url) as string) : ownScript(url);
}
