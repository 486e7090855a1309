/**
 * The plaintext of a message that carries a file, a photo or a voice message: where the
 * ciphertext is (the attachment id), how to open and check it (key, SHA-256, sizes), and what the
 * person sees before downloading (name, type, caption, a photo's tiny thumbnail, a voice message's
 * duration and waveform). All of it travels inside the message's ciphertext; the service stores
 * only the padded ciphertext under the id.
 *
 * Checked strictly on receipt: a field of the wrong shape makes the whole message malformed (shown
 * as an error, never trusted), including sizes that do not match the padding scheme of
 * crypto/file.ts and names that could pass for something else (control or bidirectional
 * characters, path separators).
 */
import { isB64urlOfLength, isId16 } from '@svc/protocol';
import { cipherSize, FILE_KEY_BYTES } from '../crypto/file.js';

export const ATTACHMENT_TYPES = ['file', 'photo', 'voice'] as const;
export type AttachmentType = (typeof ATTACHMENT_TYPES)[number];

/** The fields every attachment message carries. */
export interface AttachmentFields {
  /** The attachment id (id16) under which the service stores the ciphertext. */
  id: string;
  /** The file key, 32 bytes b64url. */
  key: string;
  /** SHA-256 of the whole ciphertext, b64url. */
  sha256: string;
  /** Ciphertext bytes (what the service stores). */
  size: number;
  /** The file's real length in bytes. */
  plainSize: number;
  name: string;
  /** MIME type, lower case, without parameters. */
  mime: string;
  /** Text sent with the file (the composer's text); searchable. */
  caption?: string;
}

/** A photo's size and a thumbnail shown at once, before the photo is downloaded. */
export interface PhotoFields {
  width: number;
  height: number;
  /** A data URL (`data:image/jpeg;base64,…`) of at most MAX_THUMB_BYTES. */
  thumb: string;
}

/** A voice message's length and a summary of its loudness for the bubble. */
export interface VoiceFields {
  durationMs: number;
  /** Up to MAX_WAVEFORM values 0–255. */
  waveform: number[];
}

/** What a chat record holds of its attachment (model.ts `ChatMessage.attachment`); the caption is the record's body. */
export type AttachmentRef = Omit<AttachmentFields, 'caption'> & { type: AttachmentType } & Partial<PhotoFields> & Partial<VoiceFields>;

export const MAX_NAME_CHARS = 255;
export const MAX_MIME_CHARS = 127;
export const MAX_THUMB_BYTES = 4096;
export const MAX_WAVEFORM = 64;
export const MAX_PHOTO_SIDE = 65_535;
export const MAX_VOICE_MS = 24 * 3600_000;
/** Larger than any limit a service may set (the quota of one account is 1 GiB by default). */
export const MAX_PLAIN_BYTES = 2 ** 40;

type Fields = Record<string, unknown>;
const isInt = (v: unknown, min: number, max: number): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max;
const MIME_RE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/;
const THUMB_RE = /^data:image\/(?:jpeg|png|webp);base64,([A-Za-z0-9+/]+={0,2})$/;
/** Control characters, bidirectional controls (which can make "gpj.exe" read as "exe.jpg") and path separators. */
const BAD_NAME_RE = /[\p{Cc}\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069/\\]/u;

export const isFileName = (v: unknown): v is string =>
  typeof v === 'string' && v.length > 0 && v.length <= MAX_NAME_CHARS && v.trim() !== '' && v !== '.' && v !== '..' && !BAD_NAME_RE.test(v);

export const isMime = (v: unknown): v is string => typeof v === 'string' && v.length <= MAX_MIME_CHARS && MIME_RE.test(v);

/** A data URL of a JPEG, PNG or WebP image of at most MAX_THUMB_BYTES bytes. */
export function isThumb(v: unknown): v is string {
  const m = typeof v === 'string' && v.length <= 32 + Math.ceil(MAX_THUMB_BYTES / 3) * 4 ? THUMB_RE.exec(v) : null;
  if (!m || m[1]!.length % 4 !== 0) return false;
  const pad = m[1]!.endsWith('==') ? 2 : m[1]!.endsWith('=') ? 1 : 0;
  return (m[1]!.length / 4) * 3 - pad <= MAX_THUMB_BYTES;
}

/** A name that passes isFileName: the offending characters become "_", cut to MAX_NAME_CHARS. */
export function safeFileName(name: string): string {
  let out = name.replace(new RegExp(BAD_NAME_RE.source, 'gu'), '_');
  // Cut on a whole code point, never between the halves of a surrogate pair.
  if (out.length > MAX_NAME_CHARS) out = out.slice(0, MAX_NAME_CHARS).replace(/[\uD800-\uDBFF]$/, '');
  return isFileName(out) ? out : 'file';
}

/** A MIME type that passes isMime (lower case, parameters dropped), or application/octet-stream. */
export function safeMime(mime: string | undefined): string {
  const m = (mime ?? '').split(';')[0]!.trim().toLowerCase();
  return isMime(m) ? m : 'application/octet-stream';
}

/** The common fields, checked and copied in wire order; null when one is malformed. */
export function checkAttachmentFields(o: Fields): AttachmentFields | null {
  if (!isId16(o.id) || !isB64urlOfLength(o.key, FILE_KEY_BYTES) || !isB64urlOfLength(o.sha256, 32)) return null;
  if (!isInt(o.plainSize, 0, MAX_PLAIN_BYTES) || !isInt(o.size, 1, Number.MAX_SAFE_INTEGER) || o.size !== cipherSize(o.plainSize)) return null;
  if (!isFileName(o.name) || !isMime(o.mime) || (o.caption !== undefined && typeof o.caption !== 'string')) return null;
  return {
    id: o.id,
    key: o.key,
    sha256: o.sha256,
    size: o.size,
    plainSize: o.plainSize,
    name: o.name,
    mime: o.mime,
    ...(o.caption !== undefined ? { caption: o.caption } : {}),
  };
}

export function checkPhotoFields(o: Fields): PhotoFields | null {
  return isInt(o.width, 1, MAX_PHOTO_SIDE) && isInt(o.height, 1, MAX_PHOTO_SIDE) && isThumb(o.thumb)
    ? { width: o.width, height: o.height, thumb: o.thumb }
    : null;
}

export function checkVoiceFields(o: Fields): VoiceFields | null {
  const w = o.waveform;
  return isInt(o.durationMs, 0, MAX_VOICE_MS) && Array.isArray(w) && w.length <= MAX_WAVEFORM && w.every((x) => isInt(x, 0, 255))
    ? { durationMs: o.durationMs, waveform: [...w] }
    : null;
}
