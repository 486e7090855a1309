/**
 * The Node.js releases the service supports. An end-of-life release still runs it, but gets no
 * security fixes, so the service says so in its log at every start rather than refusing to start
 * (a refusal would turn an upgrade reminder into an outage).
 */

/** The warning to log for this Node.js version, or null when it is supported (as package.json's `engines` states: 22.13 or newer in the 22 line, 24 or newer). */
export function runtimeWarning(version: string): string | null {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  if (major >= 24 || (major === 22 && minor >= 13)) return null;
  return `Node.js ${version} is not a supported runtime (it gets no security fixes, or is older than the 22.13 this service needs); run the service on Node.js 24 LTS (docs/DEPLOY.md)`;
}
