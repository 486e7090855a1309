/**
 * File encryption for attachments: a fresh AES-256-GCM key per file, the plaintext padded to a
 * Padmé bucket and cut into chunks that each seal to exactly one upload part.
 *
 *   padded  = the plaintext, then zero bytes up to paddedLength(plainSize)
 *   chunk i = padded[i·CHUNK_BYTES, (i+1)·CHUNK_BYTES)          CHUNK_BYTES = partBytes − 16
 *   part i  = AES-GCM(file key, iv = i as 12 bytes big-endian, chunk i, AAD "svc/file/v1|<i>|<last>")
 *
 * A counter iv is safe because the key seals this one file only. The AAD binds each chunk's place
 * and whether it ends the file, so parts cannot be reordered, dropped or cut off unnoticed. The
 * real length travels inside the message, never in the clear.
 */
import { ATTACHMENT } from '@svc/protocol';
import { buf, randomBytes, subtle, utf8 } from '../bytes.js';
import { IV_BYTES } from './aead.js';

export const FILE_KEY_BYTES = 32;
export const GCM_TAG_BYTES = 16;
/** Plaintext bytes per chunk: a sealed chunk is exactly one upload part. */
export const CHUNK_BYTES = ATTACHMENT.partBytes - GCM_TAG_BYTES;
/** No file is padded to less, so tiny files all look the same. */
export const MIN_PADDED_BYTES = 256;

export const fileAad = (index: number, last: boolean): string => `svc/file/v1|${index}|${last ? 1 : 0}`;

/** The chunk index as a 12-byte big-endian iv. */
export function chunkIv(index: number): Uint8Array {
  if (!Number.isSafeInteger(index) || index < 0) throw new TypeError('chunk index must be a whole number');
  const iv = new Uint8Array(IV_BYTES);
  let v = index;
  for (let i = IV_BYTES - 1; i >= 0 && v > 0; i--) {
    iv[i] = v % 256;
    v = Math.floor(v / 256);
  }
  return iv;
}

const bitLength = (n: number): number => (n < 2 ** 31 ? 32 - Math.clz32(n) : n.toString(2).length);

/**
 * Padmé (Nikitin et al., "Reducing Metadata Leakage from Encrypted Files and Communication with
 * PURBs", 2019): keeps the top bits of the length that its bit length needs and rounds the rest up,
 * so a padded length reveals O(log log L) bits and costs at most 12.5 % (6.25 % from 256 bytes on,
 * 3.125 % from 64 KiB on).
 */
export function padme(length: number): number {
  if (!Number.isSafeInteger(length) || length < 0) throw new TypeError('length must be a whole number');
  if (length < 2) return length;
  const e = bitLength(length) - 1;
  const s = bitLength(e);
  const step = 2 ** (e - s);
  return Math.ceil(length / step) * step;
}

/** The plaintext's length once padded: Padmé's bucket, at least MIN_PADDED_BYTES. */
export function paddedLength(plainSize: number): number {
  return Math.max(MIN_PADDED_BYTES, padme(plainSize));
}

/** How many chunks (upload parts) a file of `plainSize` bytes makes. */
export function chunkCount(plainSize: number): number {
  return Math.ceil(paddedLength(plainSize) / CHUNK_BYTES);
}

/** The ciphertext's size for a file of `plainSize` bytes: what the service stores and checks. */
export function cipherSize(plainSize: number): number {
  return paddedLength(plainSize) + chunkCount(plainSize) * GCM_TAG_BYTES;
}

/** The largest file whose ciphertext stays within `maxBytes`. */
export function maxPlainSize(maxBytes: number): number {
  // cipherSize grows with plainSize, so a binary search finds the edge.
  let lo = -1;
  let hi = maxBytes;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (cipherSize(mid) <= maxBytes) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** A fresh file key (32 random bytes); the message carries it, the service never sees it. */
export function newFileKey(): Uint8Array {
  return randomBytes(FILE_KEY_BYTES);
}

/** Imports a file key as a non-extractable AES-256-GCM key for one usage. */
export function importFileKey(raw: Uint8Array, usage: 'encrypt' | 'decrypt'): Promise<CryptoKey> {
  if (raw.length !== FILE_KEY_BYTES) throw new TypeError('a file key is 32 bytes');
  return subtle().importKey('raw', buf(raw), { name: 'AES-GCM', length: 256 }, false, [usage]);
}

/** Seals chunk `index` (`last` when it ends the file) into one upload part. */
export async function sealChunk(key: CryptoKey, index: number, last: boolean, chunk: Uint8Array): Promise<Uint8Array> {
  if (chunk.length === 0 || chunk.length > CHUNK_BYTES) throw new TypeError('a chunk holds 1 to CHUNK_BYTES bytes');
  const ct = await subtle().encrypt(
    { name: 'AES-GCM', iv: buf(chunkIv(index)), additionalData: buf(utf8(fileAad(index, last))), tagLength: 128 },
    key,
    buf(chunk),
  );
  return new Uint8Array(ct);
}

/** Opens one part; throws when its tag, place or last flag does not verify. */
export async function openChunk(key: CryptoKey, index: number, last: boolean, part: Uint8Array): Promise<Uint8Array> {
  const pt = await subtle().decrypt(
    { name: 'AES-GCM', iv: buf(chunkIv(index)), additionalData: buf(utf8(fileAad(index, last))), tagLength: 128 },
    key,
    buf(part),
  );
  return new Uint8Array(pt);
}
