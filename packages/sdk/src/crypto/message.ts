/**
 * Message plaintext and its encryption.
 *
 * Plaintext: UTF-8 JSON {"v":1,"type":"text","body":…,"sentAt":…} followed by zero bytes up to the
 * next multiple of 256 (at least 256), so ciphertext lengths reveal only a coarse size. The padding
 * is unambiguous because JSON text never contains a raw zero byte (U+0000 is escaped as \u0000):
 * the JSON ends at the first zero byte, and every byte after it must be zero.
 *
 * AAD binds the envelope's open fields, the service-set `from` included, so an envelope whose
 * sender, id, target or key id was changed fails to decrypt:
 *   DM:   "svc/msg/v1|<id>|<from>|dm:<recipient>|dm"          key = pair key(from, recipient)
 *   room: "svc/msg/v1|<id>|<from>|room:<roomId>|<keyId>"      key = the room key keyId
 */
import { fromUtf8, utf8 } from '../bytes.js';
import { SdkError } from '../errors.js';
import { open, seal, type Sealed } from './aead.js';

export const PAD_BLOCK = 256;

/**
 * The largest padded plaintext whose send request still fits the 32 KiB body limit:
 * 95 blocks → 24336 ciphertext bytes → 32448 b64url characters, plus about 120 bytes of JSON.
 */
export const MAX_PADDED_BYTES = 95 * PAD_BLOCK;

export interface MessagePlain {
  v: 1;
  type: 'text';
  body: string;
  /** Sender's (server-corrected) clock when the message was written, ms. */
  sentAt: number;
}

/** JSON in the fixed field order, zero-padded; SdkError too_long when it does not fit one message. */
export function encodePlaintext(m: { body: string; sentAt: number }): Uint8Array {
  const json = utf8(JSON.stringify({ v: 1, type: 'text', body: m.body, sentAt: m.sentAt }));
  const size = Math.max(PAD_BLOCK, Math.ceil(json.length / PAD_BLOCK) * PAD_BLOCK);
  if (size > MAX_PADDED_BYTES) throw new SdkError('too_long');
  const out = new Uint8Array(size);
  out.set(json);
  return out;
}

/** Strips the padding and checks the shape; throws TypeError when anything is off. */
export function decodePlaintext(bytes: Uint8Array): MessagePlain {
  if (bytes.length === 0 || bytes.length % PAD_BLOCK !== 0) throw new TypeError('bad padding length');
  let end = bytes.indexOf(0);
  if (end < 0) end = bytes.length;
  for (let i = end; i < bytes.length; i++) if (bytes[i] !== 0) throw new TypeError('bad padding');
  const v: unknown = JSON.parse(fromUtf8(bytes.subarray(0, end)));
  if (typeof v !== 'object' || v === null) throw new TypeError('not an object');
  const o = v as Record<string, unknown>;
  if (o.v !== 1 || o.type !== 'text' || typeof o.body !== 'string' || typeof o.sentAt !== 'number' || !Number.isFinite(o.sentAt)) {
    throw new TypeError('unknown message form');
  }
  return { v: 1, type: 'text', body: o.body, sentAt: o.sentAt };
}

export const dmAad = (id: string, from: string, recipient: string): string => `svc/msg/v1|${id}|${from}|dm:${recipient}|dm`;
export const roomAad = (id: string, from: string, roomId: string, keyId: string): string => `svc/msg/v1|${id}|${from}|room:${roomId}|${keyId}`;

export interface DmMeta {
  id: string;
  from: string;
  /** The recipient nick (the envelope's to.dm). */
  to: string;
}

export interface RoomMeta {
  id: string;
  from: string;
  roomId: string;
  keyId: string;
}

/** The envelope fields a decryption needs (an Envelope fits). */
export interface EnvelopeLike {
  id: string;
  from: string;
  to: { dm: string } | { room: string };
  keyId: string;
  iv: string;
  ct: string;
}

/** `pairKey` = pair key(from, to). */
export function encryptDm(pairKey: CryptoKey, meta: DmMeta, msg: { body: string; sentAt: number }, iv?: Uint8Array): Promise<Sealed> {
  return seal(pairKey, encodePlaintext(msg), dmAad(meta.id, meta.from, meta.to), iv);
}

/** Throws when the envelope is not a DM, the tag does not verify, or the plaintext is malformed. */
export async function decryptDm(pairKey: CryptoKey, env: EnvelopeLike): Promise<MessagePlain> {
  if (!('dm' in env.to) || env.keyId !== 'dm') throw new TypeError('not a dm envelope');
  return decodePlaintext(await open(pairKey, env, dmAad(env.id, env.from, env.to.dm)));
}

export function encryptRoomMessage(roomKey: CryptoKey, meta: RoomMeta, msg: { body: string; sentAt: number }, iv?: Uint8Array): Promise<Sealed> {
  return seal(roomKey, encodePlaintext(msg), roomAad(meta.id, meta.from, meta.roomId, meta.keyId), iv);
}

export async function decryptRoomMessage(roomKey: CryptoKey, env: EnvelopeLike): Promise<MessagePlain> {
  if (!('room' in env.to)) throw new TypeError('not a room envelope');
  return decodePlaintext(await open(roomKey, env, roomAad(env.id, env.from, env.to.room, env.keyId)));
}
