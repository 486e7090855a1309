/**
 * The history transfer's wire form (docs/CRYPTO.md): how records become
 * chunks that each fit one message, how chunks are sealed and chained, and how the control
 * messages are authenticated. Pure functions; transfer.ts runs the protocol.
 *
 *   chain[0]   = SHA-256("svc/transfer/v1|<transfer>")
 *   data[k]    = iv || AES-256-GCM(transferKey, iv, payload[k],
 *                  AAD "svc/transfer/v1|history-chunk|<nick>|<transfer>|<device>|<k>|<total>|<b64url chain[k]>")
 *   chain[k+1] = SHA-256(chain[k] || data[k])          digest = chain[total]
 *   tag        = iv || AES-256-GCM(transferKey, iv, empty, AAD "svc/transfer/v1|<type>|<nick>|<fields>")
 *
 * payload[k] is DEFLATE of `{"v":1,"n":…,"c":…}` (whole records, history-codec.ts) or, for a record
 * too large for one chunk, `{"v":1,"piece":{"rec"?:…,"text":…,"end":…}}`: its text in pieces, the
 * first piece carrying the record without its text.
 */
import { b64, buf, concat, randomBytes, subtle, unb64, utf8 } from '../bytes.js';
import { IV_BYTES } from '../crypto/aead.js';
import { sha256 } from '../crypto/hkdf.js';
import { SdkError } from '../errors.js';
import { checkRecord, compress, decompressJson, recordsFromJson, recordsJson } from './history-codec.js';
import type { ChatMessage } from './model.js';
import { MAX_PADDED_BYTES, MAX_TRANSFER_CHUNKS, type HistoryPlain } from '../wire/plaintext.js';

export const TRANSFER_LABEL = 'svc/transfer/v1';
/** A chunk never inflates to more than this (it fits 24 KiB compressed). */
const INFLATE_MAX = 16 * 1024 * 1024;

export interface Piece {
  /** The record without its text, in the first piece; null there when it fails the check (its text is read, then left out). */
  rec?: ChatMessage | null;
  text: string;
  end: boolean;
}
export type Payload = { records: ChatMessage[]; dropped: number } | { piece: Piece };

export interface BuiltChunk {
  /** b64url of iv || ciphertext. */
  data: string;
  /** Whole records this chunk completes (for progress). */
  records: number;
}

export interface BuiltTransfer {
  total: number;
  records: number;
  chunks: BuiltChunk[];
  /** b64url of chain[total]. */
  digest: string;
}

export const chainStart = (transfer: string): Promise<Uint8Array> => sha256(utf8(`${TRANSFER_LABEL}|${transfer}`));
export const chainNext = (h: Uint8Array, data: Uint8Array): Promise<Uint8Array> => sha256(concat(h, data));

export function chunkAad(nick: string, transfer: string, device: string, seq: number, total: number, prev: Uint8Array): string {
  return `${TRANSFER_LABEL}|history-chunk|${nick}|${transfer}|${device}|${seq}|${total}|${b64(prev)}`;
}

type Tagged = Exclude<HistoryPlain, { type: 'history-chunk' }>;
/** The fields of a control message that its tag covers: all of them but sentAt (set when the outbox sends it). */
export type TagFields = Tagged extends infer P ? (P extends Tagged ? Omit<P, 'tag' | 'sentAt' | 'v' | 'mid' | 'archive'> : never) : never;

export function tagAad(nick: string, p: TagFields): string {
  const f: (string | number)[] =
    p.type === 'history-request'
      ? [p.device, p.nonce]
      : p.type === 'history-archive'
        ? [
            p.transfer,
            p.device,
            p.nonce,
            p.total,
            p.records,
            p.digest,
            p.files,
            ...p.parts.flatMap((a) => [a.id, a.key, a.sha256, a.size, a.plainSize]),
          ]
        : p.type === 'history-offer'
          ? [p.transfer, p.device, p.nonce, p.total, p.records]
          : p.type === 'history-ack'
            ? [p.transfer, p.device, p.next]
            : [p.transfer, p.device, p.total, p.digest];
  return [TRANSFER_LABEL, p.type, nick, ...f].join('|');
}

async function gcm(op: 'encrypt' | 'decrypt', key: CryptoKey, iv: Uint8Array, aad: string, data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await subtle()[op]({ name: 'AES-GCM', iv: buf(iv), additionalData: buf(utf8(aad)), tagLength: 128 }, key, buf(data)));
}

export async function sealData(key: CryptoKey, aad: string, plain: Uint8Array): Promise<Uint8Array> {
  const iv = randomBytes(IV_BYTES);
  return concat(iv, await gcm('encrypt', key, iv, aad, plain));
}

/** The plaintext, or null when the tag does not verify (forged, altered, truncated, wrong key or place). */
export async function openData(key: CryptoKey, aad: string, sealed: Uint8Array): Promise<Uint8Array | null> {
  if (sealed.length < IV_BYTES + 16) return null;
  try {
    return await gcm('decrypt', key, sealed.subarray(0, IV_BYTES), aad, sealed.subarray(IV_BYTES));
  } catch {
    return null;
  }
}

export async function makeTag(key: CryptoKey, aad: string): Promise<string> {
  return b64(await sealData(key, aad, new Uint8Array(0)));
}

export async function checkTag(key: CryptoKey, aad: string, tag: string): Promise<boolean> {
  return (await openData(key, aad, unb64(tag))) !== null;
}

/** The payload of an opened chunk, or null when it is not one. */
export function decodePayload(bytes: Uint8Array): Payload | null {
  const v = decompressJson(bytes, INFLATE_MAX);
  if (typeof v !== 'object' || v === null || (v as { v?: unknown }).v !== 1) return null;
  const piece = (v as { piece?: unknown }).piece;
  if (piece === undefined) {
    return recordsFromJson(v);
  }
  if (typeof piece !== 'object' || piece === null) return null;
  const p = piece as Record<string, unknown>;
  if (typeof p.text !== 'string' || typeof p.end !== 'boolean') return null;
  if (p.rec === undefined) return { piece: { text: p.text, end: p.end } };
  const rec = checkRecord(p.rec);
  if (rec?.body !== undefined) return null;
  return { piece: { rec, text: p.text, end: p.end } };
}

/** How many compressed bytes one chunk may carry, for chunks addressed to `device`. */
export function chunkCapacity(device: string): number {
  // The chunk's JSON (plaintext.ts writes it in this field order) with empty data and the largest numbers.
  const probe = {
    v: 1,
    type: 'history-chunk',
    transfer: 'A'.repeat(22),
    device,
    seq: MAX_TRANSFER_CHUNKS - 1,
    total: MAX_TRANSFER_CHUNKS,
    data: '',
    sentAt: 1e13,
  };
  const chars = MAX_PADDED_BYTES - utf8(JSON.stringify(probe)).length;
  return Math.floor((chars * 3) / 4) - IV_BYTES - 16;
}

/**
 * The largest n in [1, max] whose encoding fits `capacity` (0 when none), within 1 %: sizes grow
 * about in proportion to n, so each try aims at the proportional estimate, halving the gap when
 * that does not narrow it. `size(n)` keeps the bytes of the last n that fit (lo only grows).
 */
function largest(size: (n: number) => number, capacity: number, max: number, guess: number): number {
  let lo = 0;
  let hi = max + 1;
  let n = Math.min(max, Math.max(1, guess));
  for (;;) {
    const s = size(n);
    if (s <= capacity) lo = n;
    else hi = n;
    const tol = Math.max(1, Math.floor(lo / 100));
    if (hi - lo <= tol) return lo;
    let est = Math.floor((n * capacity * (s <= capacity ? 0.995 : 0.99)) / Math.max(1, s));
    // Just above what fits: one more try tells whether lo is within the tolerance.
    if (est <= lo) est = lo + tol;
    if (est >= hi) est = Math.floor((lo + hi) / 2);
    n = Math.min(max, est);
  }
}

/** Splits `records` into compressed payloads that each fit one chunk. */
export function payloads(records: readonly ChatMessage[], capacity: number): { bytes: Uint8Array; records: number }[] {
  const out: { bytes: Uint8Array; records: number }[] = [];
  let guess = 200;
  for (let i = 0; i < records.length;) {
    // Each fitting try keeps its bytes: the last one that fits is the answer's (lo only grows).
    const last: { z?: Uint8Array } = {};
    const size = (n: number): number => {
      const z = compress(recordsJson(records.slice(i, i + n)));
      if (z.length <= capacity) last.z = z;
      return z.length;
    };
    const n = largest(size, capacity, records.length - i, guess);
    if (n === 0) {
      out.push(...pieces(records[i]!, capacity));
      i++;
      continue;
    }
    out.push({ bytes: last.z!, records: n });
    guess = n;
    i += n;
  }
  return out;
}

/** A record too large for one chunk: its text in pieces over several chunks. */
function pieces(r: ChatMessage, capacity: number): { bytes: Uint8Array; records: number }[] {
  const { body = '', ...rec } = r;
  const out: { bytes: Uint8Array; records: number }[] = [];
  for (let at = 0; at < body.length;) {
    const last: { z?: Uint8Array; end?: number } = {};
    const size = (n: number): number => {
      let end = at + n;
      // Never cut between the two halves of a surrogate pair.
      if (end < body.length && end - at > 1 && /[\ud800-\udbff]/.test(body[end - 1]!)) end--;
      const piece: Piece = { ...(at === 0 ? { rec } : {}), text: body.slice(at, end), end: end >= body.length };
      const z = compress(JSON.stringify({ v: 1, piece }));
      if (z.length <= capacity) Object.assign(last, { z, end });
      return z.length;
    };
    if (largest(size, capacity, body.length - at, 4096) === 0) throw new SdkError('invalid', { message: 'A message is too large to transfer.' });
    out.push({ bytes: last.z!, records: last.end! >= body.length ? 1 : 0 });
    at = last.end!;
  }
  if (out.length === 0) throw new SdkError('invalid', { message: 'A message is too large to transfer.' });
  return out;
}

/** Seals and chains the payloads of one transfer. */
export async function buildTransfer(o: {
  key: CryptoKey;
  nick: string;
  transfer: string;
  device: string;
  records: readonly ChatMessage[];
  /** Compressed bytes per chunk: by default what fits one message. */
  capacity?: number;
}): Promise<BuiltTransfer> {
  const parts = payloads(o.records, o.capacity ?? chunkCapacity(o.device));
  if (parts.length > MAX_TRANSFER_CHUNKS) throw new SdkError('invalid', { message: 'The history is too large to transfer.' });
  const chunks: BuiltChunk[] = [];
  let h = await chainStart(o.transfer);
  for (const [seq, p] of parts.entries()) {
    const sealed = await sealData(o.key, chunkAad(o.nick, o.transfer, o.device, seq, parts.length, h), p.bytes);
    chunks.push({ data: b64(sealed), records: p.records });
    h = await chainNext(h, sealed);
  }
  return { total: parts.length, records: o.records.length, chunks, digest: b64(h) };
}
