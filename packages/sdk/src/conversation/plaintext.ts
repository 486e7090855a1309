/**
 * The plaintext inside every message's `ct`: the set of types, their schema check on decrypt, and
 * the padding. The service never sees which type a message carries: every type is padded the
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
import {
  checkAttachmentFields,
  checkPhotoFields,
  checkVoiceFields,
  type AttachmentFields,
  type PhotoFields,
  type VoiceFields,
} from './attachment-plain.js';

export const PAD_BLOCK = 256;

/**
 * The largest padded plaintext whose send request still fits the 32 KiB body limit:
 * 95 blocks → 24336 ciphertext bytes → 32448 b64url characters, plus about 120 bytes of JSON.
 */
export const MAX_PADDED_BYTES = 95 * PAD_BLOCK;

/** A message sent while the chat's disappearing messages timer was on carries it (seconds). */
interface Expiring {
  expire?: number;
}

interface Common {
  v: 1;
  /** Sender's (server-corrected) clock when the message was written, ms. */
  sentAt: number;
  /** Random id of this message across retries (16 random bytes, b64url); absent from older clients. */
  mid?: string;
}

/** A message a person wrote; `replyTo` is the envelope id of the message it quotes. */
export interface TextPlain extends Common, Expiring {
  type: 'text';
  body: string;
  replyTo?: string;
}

/** Adds or removes the sender's reaction `emoji` on the message `target` (an envelope id). */
export interface ReactionPlain extends Common {
  type: 'reaction';
  target: string;
  emoji: string;
  op: 'add' | 'remove';
}

/** Replaces the text of `target`; applies only when the sender is the target's sender. */
export interface EditPlain extends Common {
  type: 'edit';
  target: string;
  body: string;
}

/** Deletes `target` for everyone; applies only when the sender is the target's sender. */
export interface DeletePlain extends Common {
  type: 'delete';
  target: string;
}

/** The sender's device holds (`delivered`) or its person has seen (`read`) the messages `ids`. */
export interface ReceiptPlain extends Common {
  type: 'receipt';
  ids: string[];
  status: 'delivered' | 'read';
}

/**
 * A room's membership as its owner changed it (announced inside the room's ciphertext, so that
 * members need not trust the service's list): `members` is the whole membership after the change,
 * in join order. A member also sends one as it leaves, removing only itself. The rules of who may
 * announce what are in membership-record.ts.
 */
export interface MembersPlain extends Common {
  type: 'members';
  room: string;
  owner: string;
  members: string[];
  added: string[];
  removed: string[];
}

/** A file: where its ciphertext is and how to open it, its name, type and caption (attachment-plain.ts). */
export interface FilePlain extends Common, Expiring, AttachmentFields {
  type: 'file';
}

/** A photo: a file with its size and a tiny thumbnail shown before it is downloaded. */
export interface PhotoPlain extends Common, Expiring, AttachmentFields, PhotoFields {
  type: 'photo';
}

/** A voice message: a file with its duration and a waveform summary. */
export interface VoicePlain extends Common, Expiring, AttachmentFields, VoiceFields {
  type: 'voice';
}

export type AttachmentPlain = FilePlain | PhotoPlain | VoicePlain;

/*
 * History moved between the account's own devices (conversation/transfer.ts, docs/CRYPTO.md
 * "History transfer"). They travel only in the account's private room; `device` is the device the
 * history goes to (in a request: the device asking). `tag` authenticates the other fields under
 * the account's transfer key, `data` is sealed under it: see transfer-wire.ts.
 */

/** A new device asks the account's other devices for the history; `nonce` is fresh per request. */
export interface HistoryRequestPlain extends Common {
  type: 'history-request';
  device: string;
  nonce: string;
  tag: string;
  /**
   * The asking device takes the history as an archive in the attachment store (`history-archive`).
   * Outside the tag: a device of an older version drops the field and checks the tag as before.
   */
  archive?: true;
}

/** Announces that a device sends `records` records in `total` chunks under transfer id `transfer`. */
export interface HistoryOfferPlain extends Common {
  type: 'history-offer';
  transfer: string;
  device: string;
  /** The nonce of the request it answers: a device takes only offers for a request it still waits on. */
  nonce: string;
  total: number;
  records: number;
  tag: string;
}

/** Chunk `seq` of `total`: compressed records sealed under the transfer key, chained to the chunk before. */
export interface HistoryChunkPlain extends Common {
  type: 'history-chunk';
  transfer: string;
  device: string;
  seq: number;
  total: number;
  data: string;
}

/** The receiving device `device` expects chunk `next` (`next` = total: it holds all of them). */
export interface HistoryAckPlain extends Common {
  type: 'history-ack';
  transfer: string;
  device: string;
  next: number;
  tag: string;
}

/** Every chunk was sent; `digest` is the end of the hash chain over them. */
export interface HistoryDonePlain extends Common {
  type: 'history-done';
  transfer: string;
  device: string;
  total: number;
  digest: string;
  tag: string;
}

/** One attachment of a history archive: where it is and how to open and check it. */
export interface ArchivePart {
  id: string;
  key: string;
  sha256: string;
  /** Ciphertext bytes. */
  size: number;
  plainSize: number;
}

/**
 * The whole history at once (in place of an offer, its chunks and history-done): the sealed,
 * chained chunks and the files kept on the sending device, uploaded as `parts` attachments
 * (conversation/transfer-archive.ts).
 */
export interface HistoryArchivePlain extends Common {
  type: 'history-archive';
  transfer: string;
  device: string;
  nonce: string;
  /** Chunks in the archive, records in them, the end of their hash chain, and the files after them. */
  total: number;
  records: number;
  digest: string;
  files: number;
  parts: ArchivePart[];
  tag: string;
}

export type HistoryPlain = HistoryRequestPlain | HistoryOfferPlain | HistoryChunkPlain | HistoryAckPlain | HistoryDonePlain | HistoryArchivePlain;

/*
 * Membership records moved between the account's own devices (record-transfer.ts), in its private
 * room like the history: a device that lacks the record of a room asks, the others answer with
 * theirs, sealed under the transfer key for the asking device and its request's nonce.
 */

/** Device `device` asks the account's other devices for their membership records. */
export interface RecordsRequestPlain extends Common {
  type: 'records-request';
  device: string;
  nonce: string;
  tag: string;
}

/** Part `seq` of `total` of one device's answer to the request `nonce` of `device`. */
export interface RecordsPlain extends Common {
  type: 'records';
  device: string;
  nonce: string;
  seq: number;
  total: number;
  data: string;
}

/*
 * Everyday conversation state (docs/CRYPTO.md): pins and the disappearing
 * messages timer are shared by the chat's members; a chat's mute is the person's own setting and
 * travels only in the account's private room, to its other devices.
 */

/** Pins (`op` pin) or unpins `target` (an envelope id of the chat) for every member. */
export interface PinPlain extends Common {
  type: 'pin';
  target: string;
  op: 'pin' | 'unpin';
}

/** Sets the chat's disappearing messages timer for every member: `seconds` one of TIMER_SECONDS, 0 = off. */
export interface TimerPlain extends Common {
  type: 'timer';
  seconds: number;
}

/** The account's own mute of `chat` (in its private room only): `until` ms, 0 = not muted, or "always". */
export interface MutePlain extends Common {
  type: 'mute';
  chat: string;
  until: number | 'always';
}

/** A type this client does not know (from a newer client): shown as a placeholder, never as text. */
export interface UnknownPlain {
  v: number;
  type: 'unknown';
  /** The type (and version) the sender used, for the placeholder's details. */
  original: string;
  sentAt: number;
  mid?: string;
}

export type KnownPlain =
  | TextPlain
  | ReactionPlain
  | EditPlain
  | DeletePlain
  | ReceiptPlain
  | MembersPlain
  | HistoryPlain
  | RecordsRequestPlain
  | RecordsPlain
  | AttachmentPlain
  | PinPlain
  | TimerPlain
  | MutePlain;
export type Plain = KnownPlain | UnknownPlain;
export type PlainType = KnownPlain['type'];

/** Plaintext as callers build it: `v` is added by the encoder. */
export type PlainInput = KnownPlain extends infer P ? (P extends KnownPlain ? Omit<P, 'v'> : never) : never;

export const MAX_EMOJI_CHARS = 16;
export const MAX_RECEIPT_IDS = 256;
const MID_RE = /^[A-Za-z0-9_-]{22}$/;
/** More parts than any device's membership records need (one part holds dozens of rooms). */
export const MAX_RECORD_PARTS = 1_000;
/** More chunks than any history needs (a chunk holds hundreds of records). */
export const MAX_TRANSFER_CHUNKS = 100_000;
/** More attachments than an archive needs: at the default limit of 25 MiB each, far above an account's quota. */
export const MAX_ARCHIVE_PARTS = 128;
/** More files than a device keeps. */
export const MAX_ARCHIVE_FILES = 1_000_000;
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
