/**
 * History at rest (IndexedDB): AES-256-GCM under the history key with AAD "svc/atrest/v1|<context>".
 *
 * History key = HKDF-SHA256(ECDH(identity private, identity public) x-coordinate, empty salt,
 * info "svc/history/v1"). It is derived from the identity, which only the password-derived
 * encryption key opens, rather than from the encryption key itself: a password change re-seals
 * the identity but keeps it, so history stored on every device stays readable after the change.
 *
 * The context names the record (for example "msg|dm:bob|<id>"), so a stored row cannot be swapped
 * for another one. The first plaintext byte tells bytes (0x01) from JSON (0x02).
 */
import { concat, fromUtf8, utf8 } from '../bytes.js';
import { open, seal, type Sealed } from './aead.js';
import type { Identity } from './identity.js';
import { deriveOwnKey, INFO_HISTORY, ownKeyBytes } from './ownkeys.js';

export { INFO_HISTORY } from './ownkeys.js';

/** The raw key bytes; for test vectors only. */
export function historyKeyBytes(identity: Identity): Promise<Uint8Array> {
  return ownKeyBytes(identity, INFO_HISTORY);
}

/** Non-extractable AES-256-GCM key for this account's history at rest, the same on every device. */
export function deriveHistoryKey(identity: Identity): Promise<CryptoKey> {
  return deriveOwnKey(identity, INFO_HISTORY);
}

export const atRestAad = (context: string): string => `svc/atrest/v1|${context}`;

const KIND_BYTES = 1;
const KIND_JSON = 2;

/** Seals bytes as bytes and anything else as JSON. */
export function sealAtRest(historyKey: CryptoKey, value: unknown, context = '', iv?: Uint8Array): Promise<Sealed> {
  const body = value instanceof Uint8Array ? concat(Uint8Array.of(KIND_BYTES), value) : concat(Uint8Array.of(KIND_JSON), utf8(JSON.stringify(value)));
  return seal(historyKey, body, atRestAad(context), iv);
}

/** Returns what sealAtRest was given (a Uint8Array, or the parsed JSON value); throws when it does not open. */
export async function openAtRest<T = unknown>(historyKey: CryptoKey, sealed: Sealed, context = ''): Promise<T | Uint8Array> {
  const pt = await open(historyKey, sealed, atRestAad(context));
  if (pt[0] === KIND_BYTES) return pt.subarray(1);
  if (pt[0] === KIND_JSON) return JSON.parse(fromUtf8(pt.subarray(1))) as T;
  throw new TypeError('unknown at-rest record kind');
}
