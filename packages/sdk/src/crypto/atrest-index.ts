/**
 * The index key: what IndexedDB needs to find a record (its id, its chat, the duplicate check's
 * plaintext id, a waiting action's target) is stored as a tag under it, never in the clear.
 *
 *   indexKey = HKDF-SHA256(ikm = history key bytes, salt "", info "svc/atrest-index/v1", 32), an HMAC-SHA256 key
 *   tag(ctx) = b64url(first 16 bytes of HMAC-SHA256(indexKey, "svc/atrest-index/v1|" + ctx))
 *
 * It is derived from the history key (atrest.ts), so it is the same on every device of the account
 * and across password changes, and only a holder of the identity has it. A tag is deterministic:
 * the same context gives the same tag, which is what lets a store look a record up by it, and it
 * shows which rows share a value (the rows of one chat share its tag), never the value. 16 bytes
 * keep collisions out of reach for any one account's records (2^64 of them before one is likely).
 */
import { b64, buf, subtle, utf8 } from '../bytes.js';
import { hkdf } from './hkdf.js';
import type { Identity } from './identity.js';
import { INFO_HISTORY, ownKeyBytes } from './ownkeys.js';

export const INFO_INDEX = 'svc/atrest-index/v1';
export const TAG_BYTES = 16;

/** The raw key bytes; for test vectors only. */
export async function indexKeyBytes(identity: Identity): Promise<Uint8Array> {
  const history = await ownKeyBytes(identity, INFO_HISTORY);
  try {
    return await hkdf(history, new Uint8Array(0), INFO_INDEX);
  } finally {
    history.fill(0);
  }
}

/** Non-extractable HMAC-SHA256 key for the tags of this account's records at rest. */
export async function deriveIndexKey(identity: Identity): Promise<CryptoKey> {
  const raw = await indexKeyBytes(identity);
  try {
    return await subtle().importKey('raw', buf(raw), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  } finally {
    raw.fill(0);
  }
}

/** The tag of `context` (for example "chat|dm:bob"): 22 characters of b64url. */
export async function atRestTag(indexKey: CryptoKey, context: string): Promise<string> {
  const mac = new Uint8Array(await subtle().sign('HMAC', indexKey, buf(utf8(`${INFO_INDEX}|${context}`))));
  return b64(mac.subarray(0, TAG_BYTES));
}
