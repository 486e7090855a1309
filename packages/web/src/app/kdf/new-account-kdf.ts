/**
 * A switch for the browser test suite only: the parameters this browser gives new accounts (and
 * password changes), and expects at least of an account it never saw. Real users get KDF_DEFAULTS
 * (m=65536 KiB, t=3, p=1). A test page whose init script sets `window.__svcTestKdf = 'min'` before
 * the app loads gets KDF_MIN (m=19456 KiB, t=2, p=1), the weakest the bounds allow, so the scenarios
 * that are not about the key derivation do not spend minutes in Argon2id (docs/WEB.md).
 *
 * Nothing the service sends can set it: it is read from the page's own global, never from an
 * answer, a URL or storage, and the SDK still refuses parameters outside KDF_BOUNDS whatever it says.
 */
import { KDF_DEFAULTS, KDF_MIN, type Kdf } from '@svc/sdk';

/** The work an account's key derivation costs (its salt comes with the account). */
export type KdfWork = Pick<Kdf, 'm' | 't' | 'p'>;

function testMin(): boolean {
  return (globalThis as { __svcTestKdf?: unknown }).__svcTestKdf === 'min';
}

/** The parameters for a new account or a new password on this browser. */
export function newAccountKdf(): KdfWork {
  return testMin() ? { ...KDF_MIN } : { m: KDF_DEFAULTS.m, t: KDF_DEFAULTS.t, p: KDF_DEFAULTS.p };
}
