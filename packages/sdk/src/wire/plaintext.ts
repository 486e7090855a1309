/**
 * The plaintext inside every message's `ct`: its types (plaintext-types.ts), their schema check
 * on decrypt, and the padding. The service never sees which type a message carries: every type is padded the
 * same way and travels in an ordinary envelope (docs/CRYPTO.md).
 *
 * Wire form: UTF-8 JSON `{"v":1,"type":…,…,"sentAt":…}` (a message sent under a disappearing timer
 * carries `expire` just before `sentAt`) followed by zero bytes up to the next
 * multiple of 256 (at least 256). JSON text never holds a raw zero byte (U+0000 is escaped), so
 * the JSON ends at the first zero byte and every byte after it must be zero.
 *
 * Every type carries `mid`, a random id the sender picks once per message: a send retried under a
 * new envelope id (after the service's ±5 minute window) still carries the same `mid`, and
 * receiving clients keep only the first copy from that sender. Messages of older clients have no
 * `mid` and are kept as they come.
 *
 * Decoding is strict for known types (a field of the wrong shape is a malformed message, shown
 * like a forged one) and lenient for unknown ones: a type this client does not know, or a newer
 * version, decodes to `unknown`, which the app shows as a neutral placeholder.
 */
import { b64urlDecodedLength, isB64url, isB64urlOfLength, isDeviceId, isId16, isNick, isUlid } from '@svc/protocol';
import { isTimerSeconds } from './timer-values.js';
import { fromUtf8, utf8 } from '../bytes.js';
import { SdkError } from '../errors.js';
import { checkAttachmentFields, checkPhotoFields, checkVoiceFields } from './attachment-plain.js';
import {
  MAX_ARCHIVE_FILES,
  MAX_ARCHIVE_PARTS,
  MAX_EMOJI_CHARS,
  MAX_RECEIPT_IDS,
  MAX_RECORD_PARTS,
  MAX_TRANSFER_CHUNKS,
  type ArchivePart,
  type AttachmentPlain,
  type HistoryPlain,
  type KnownPlain,
  type Plain,
  type PlainInput,
  type PlainType,
  type RecordsPlain,
  type RecordsRequestPlain,
} from './plaintext-types.js';

export * from './plaintext-types.js';

export const PAD_BLOCK = 256;

/**
 * The largest padded plaintext whose send request still fits the 32 KiB body limit:
 * 95 blocks → 24336 ciphertext bytes → 32448 b64url characters, plus about 120 bytes of JSON.
 */
export const MAX_PADDED_BYTES = 95 * PAD_BLOCK;

const MID_RE = /^[A-Za-z0-9_-]{22}$/;
/** An AES-GCM iv and tag: a sealed chunk is at least this long. */
const SEALED_MIN = 28;

type Fields = Record<string, unknown>;
const isStr = (v: unknown): v is string => typeof v === 'string';
const isMs = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isCount = (v: unknown, max: number): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0 && v <= max;
const isTag = (v: unknown): v is string => isB64urlOfLength(v, SEALED_MIN);
const isChatId = (v: unknown): v is string =>
  isStr(v) && ((v.startsWith('dm:') && isNick(v.slice(3))) || (v.startsWith('room:') && isId16(v.slice(5))));
/** No control characters and no line breaks: an emoji or a short token. */
export const isEmoji = (v: unknown): v is string =>
  isStr(v) && v.length > 0 && v.length <= MAX_EMOJI_CHARS && !/[\p{Cc}\p{Cf}\s]/u.test(v.replace(/\u200d|\ufe0f/g, ''));

/** Per type: the fields it must have (checked) and how to copy them, in wire order. */
const SCHEMAS: { [T in PlainType]: (o: Fields) => Omit<Extract<KnownPlain, { type: T }>, 'v' | 'type' | 'sentAt' | 'mid'> | null } = {
  text: (o) =>
    isStr(o.body) && (o.replyTo === undefined || isUlid(o.replyTo))
      ? { body: o.body, ...(o.replyTo !== undefined ? { replyTo: o.replyTo } : {}) }
      : null,
  reaction: (o) =>
    isUlid(o.target) && isEmoji(o.emoji) && (o.op === 'add' || o.op === 'remove') ? { target: o.target, emoji: o.emoji, op: o.op } : null,
  edit: (o) => (isUlid(o.target) && isStr(o.body) ? { target: o.target, body: o.body } : null),
  delete: (o) => (isUlid(o.target) ? { target: o.target } : null),
  receipt: (o) =>
    Array.isArray(o.ids) &&
    o.ids.length > 0 &&
    o.ids.length <= MAX_RECEIPT_IDS &&
    o.ids.every(isUlid) &&
    (o.status === 'delivered' || o.status === 'read')
      ? { ids: [...o.ids], status: o.status }
      : null,
  members: (o) => {
    const list = (v: unknown): v is string[] => Array.isArray(v) && v.length <= 256 && v.every(isNick);
    return isId16(o.room) && isNick(o.owner) && list(o.members) && list(o.added) && list(o.removed)
      ? { room: o.room, owner: o.owner, members: [...o.members], added: [...o.added], removed: [...o.removed] }
      : null;
  },
  file: (o) => checkAttachmentFields(o),
  photo: (o) => {
    const a = checkAttachmentFields(o);
    const p = checkPhotoFields(o);
    return a && p ? { ...a, ...p } : null;
  },
  voice: (o) => {
    const a = checkAttachmentFields(o);
    const v = checkVoiceFields(o);
    return a && v ? { ...a, ...v } : null;
  },
  'history-request': (o) =>
    isDeviceId(o.device) && isId16(o.nonce) && isTag(o.tag) && (o.archive === undefined || o.archive === true)
      ? { device: o.device, nonce: o.nonce, tag: o.tag, ...(o.archive ? { archive: true as const } : {}) }
      : null,
  'history-archive': (o) => {
    const parts = Array.isArray(o.parts) && o.parts.length >= 1 && o.parts.length <= MAX_ARCHIVE_PARTS ? o.parts.map(archivePart) : null;
    return isId16(o.transfer) &&
      isDeviceId(o.device) &&
      isId16(o.nonce) &&
      isCount(o.total, MAX_TRANSFER_CHUNKS) &&
      isCount(o.records, Number.MAX_SAFE_INTEGER) &&
      isB64urlOfLength(o.digest, 32) &&
      isCount(o.files, MAX_ARCHIVE_FILES) &&
      parts?.every((p) => p !== null) &&
      isTag(o.tag)
      ? {
          transfer: o.transfer,
          device: o.device,
          nonce: o.nonce,
          total: o.total,
          records: o.records,
          digest: o.digest,
          files: o.files,
          parts: parts,
          tag: o.tag,
        }
      : null;
  },
  'history-offer': (o) =>
    isId16(o.transfer) &&
    isDeviceId(o.device) &&
    isId16(o.nonce) &&
    isCount(o.total, MAX_TRANSFER_CHUNKS) &&
    isCount(o.records, Number.MAX_SAFE_INTEGER) &&
    isTag(o.tag)
      ? { transfer: o.transfer, device: o.device, nonce: o.nonce, total: o.total, records: o.records, tag: o.tag }
      : null,
  'history-chunk': (o) =>
    isId16(o.transfer) &&
    isDeviceId(o.device) &&
    isCount(o.total, MAX_TRANSFER_CHUNKS) &&
    isCount(o.seq, o.total - 1) &&
    isB64url(o.data) &&
    b64urlDecodedLength(o.data) > SEALED_MIN
      ? { transfer: o.transfer, device: o.device, seq: o.seq, total: o.total, data: o.data }
      : null,
  'history-ack': (o) =>
    isId16(o.transfer) && isDeviceId(o.device) && isCount(o.next, MAX_TRANSFER_CHUNKS) && isTag(o.tag)
      ? { transfer: o.transfer, device: o.device, next: o.next, tag: o.tag }
      : null,
  'history-done': (o) =>
    isId16(o.transfer) && isDeviceId(o.device) && isCount(o.total, MAX_TRANSFER_CHUNKS) && isB64urlOfLength(o.digest, 32) && isTag(o.tag)
      ? { transfer: o.transfer, device: o.device, total: o.total, digest: o.digest, tag: o.tag }
      : null,
  'records-request': (o) => (isDeviceId(o.device) && isId16(o.nonce) && isTag(o.tag) ? { device: o.device, nonce: o.nonce, tag: o.tag } : null),
  records: (o) =>
    isDeviceId(o.device) &&
    isId16(o.nonce) &&
    isCount(o.total, MAX_RECORD_PARTS) &&
    isCount(o.seq, o.total - 1) &&
    isB64url(o.data) &&
    b64urlDecodedLength(o.data) > SEALED_MIN
      ? { device: o.device, nonce: o.nonce, seq: o.seq, total: o.total, data: o.data }
      : null,
  pin: (o) => (isUlid(o.target) && (o.op === 'pin' || o.op === 'unpin') ? { target: o.target, op: o.op } : null),
  timer: (o) => (isTimerSeconds(o.seconds) ? { seconds: o.seconds } : null),
  mute: (o) => (isChatId(o.chat) && (o.until === 'always' || isMs(o.until)) ? { chat: o.chat, until: o.until } : null),
};

/** One part of a history-archive, checked like an attachment's fields. */
function archivePart(v: unknown): ArchivePart | null {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = v as Fields;
  const a = checkAttachmentFields({ ...o, name: 'history', mime: 'application/octet-stream' });
  return a ? { id: a.id, key: a.key, sha256: a.sha256, size: a.size, plainSize: a.plainSize } : null;
}

/** Types that are messages of their own, which may carry the disappearing timer they were sent under (`expire`). */
const EXPIRING = new Set<string>(['text', 'file', 'photo', 'voice']);

/**
 * The optional `expire` of a message type (seconds, a timer choice other than off), placed after
 * the type's own fields: {} when absent, null when present and wrong or on another type.
 */
function expireField(type: string, o: Fields): { expire?: number } | null {
  if (o.expire === undefined) return {};
  return EXPIRING.has(type) && isTimerSeconds(o.expire) && o.expire > 0 ? { expire: o.expire } : null;
}

/** Whether a plaintext carries membership records between the account's devices (record-transfer.ts, never shown). */
export function isRecordsPlain(p: { type: string }): p is RecordsRequestPlain | RecordsPlain {
  return p.type === 'records-request' || p.type === 'records';
}

/** Whether a plaintext belongs to the history transfer (handled by transfer.ts, never shown as a message). */
export function isHistoryPlain(p: { type: string }): p is HistoryPlain {
  return p.type.startsWith('history-') && Object.hasOwn(SCHEMAS, p.type);
}

/** Whether a plaintext carries a file, a photo or a voice message. */
export function isAttachmentPlain(p: { type: string }): p is AttachmentPlain {
  return p.type === 'file' || p.type === 'photo' || p.type === 'voice';
}

function isKnownType(t: unknown): t is PlainType {
  return typeof t === 'string' && Object.hasOwn(SCHEMAS, t);
}

/** The JSON of a plaintext in its fixed field order: v, type, the type's fields, sentAt, mid. */
function toJson(p: PlainInput): string {
  const check = SCHEMAS[p.type] as (o: Fields) => Fields | null;
  const fields = check(p);
  const expire = expireField(p.type, p);
  if (!fields || !expire || !isMs(p.sentAt) || (p.mid !== undefined && !MID_RE.test(p.mid)))
    throw new SdkError('invalid', { message: `Not a valid ${p.type} message.` });
  return JSON.stringify({ v: 1, type: p.type, ...fields, ...expire, sentAt: p.sentAt, ...(p.mid !== undefined ? { mid: p.mid } : {}) });
}

/** Bytes of the plaintext before padding (what decides whether it fits). */
export function plaintextBytes(p: PlainInput): number {
  return utf8(toJson(p)).length;
}

/** JSON in the fixed field order, zero-padded; SdkError `too_long` when it does not fit one message. */
export function encodePlaintext(p: PlainInput): Uint8Array {
  const json = utf8(toJson(p));
  const size = Math.max(PAD_BLOCK, Math.ceil(json.length / PAD_BLOCK) * PAD_BLOCK);
  if (size > MAX_PADDED_BYTES) throw new SdkError('too_long');
  const out = new Uint8Array(size);
  out.set(json);
  return out;
}

/**
 * Strips the padding and checks the shape. Throws TypeError when the bytes are not a plaintext of
 * this scheme or a known type has a field of the wrong shape (the app shows it as a decryption
 * error); an unknown type or a newer version decodes to `unknown`.
 */
export function decodePlaintext(bytes: Uint8Array): Plain {
  if (bytes.length === 0 || bytes.length % PAD_BLOCK !== 0) throw new TypeError('bad padding length');
  let end = bytes.indexOf(0);
  if (end < 0) end = bytes.length;
  for (let i = end; i < bytes.length; i++) if (bytes[i] !== 0) throw new TypeError('bad padding');
  const v: unknown = JSON.parse(fromUtf8(bytes.subarray(0, end)));
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new TypeError('not an object');
  const o = v as Fields;
  if (typeof o.v !== 'number' || !Number.isSafeInteger(o.v) || o.v < 1 || typeof o.type !== 'string' || !isMs(o.sentAt))
    throw new TypeError('not a message plaintext');
  const mid = typeof o.mid === 'string' && MID_RE.test(o.mid) ? o.mid : undefined;
  if (o.v !== 1 || !isKnownType(o.type)) {
    return { v: o.v, type: 'unknown', original: `${o.type.slice(0, 40)} v${o.v}`, sentAt: o.sentAt, ...(mid !== undefined ? { mid } : {}) };
  }
  if (o.mid !== undefined && mid === undefined) throw new TypeError('bad mid');
  const fields = (SCHEMAS[o.type] as (x: Fields) => Fields | null)(o);
  const expire = expireField(o.type, o);
  if (!fields || !expire) throw new TypeError(`malformed ${o.type}`);
  return { v: 1, type: o.type, ...fields, ...expire, sentAt: o.sentAt, ...(mid !== undefined ? { mid } : {}) } as KnownPlain;
}

/**
 * How much of one message a text would use: `used` and `max` in plaintext bytes (the JSON before
 * padding, whose padded size must stay within MAX_PADDED_BYTES). The composer warns past 90 %.
 */
export function textRoom(body: string, replyTo?: string): { used: number; max: number } {
  const probe: PlainInput = { type: 'text', body, sentAt: 1e13, mid: 'x'.repeat(22), ...(replyTo ? { replyTo } : {}) };
  return { used: plaintextBytes(probe), max: MAX_PADDED_BYTES };
}
