/**
 * Message encryption. The plaintext (its types, schema check and padding) is
 * wire/plaintext.ts; this file seals and opens it.
 *
 * AAD binds the envelope's open fields, the service-set `from` included, so an envelope whose
 * sender, id, target or key id was changed fails to decrypt:
 *   DM:   "svc/msg/v1|<id>|<from>|dm:<recipient>|dm"          key = pair key(from, recipient)
 *   room: "svc/msg/v1|<id>|<from>|room:<roomId>|<keyId>"      key = the room key keyId
 */
import { decodePlaintext, encodePlaintext, type Plain, type PlainInput } from '../wire/plaintext.js';
import { open, seal, type Sealed } from './aead.js';

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
export function encryptDm(pairKey: CryptoKey, meta: DmMeta, msg: PlainInput, iv?: Uint8Array): Promise<Sealed> {
  return seal(pairKey, encodePlaintext(msg), dmAad(meta.id, meta.from, meta.to), iv);
}

/** Throws when the envelope is not a DM, the tag does not verify, or the plaintext is malformed. */
export async function decryptDm(pairKey: CryptoKey, env: EnvelopeLike): Promise<Plain> {
  if (!('dm' in env.to) || env.keyId !== 'dm') throw new TypeError('not a dm envelope');
  return decodePlaintext(await open(pairKey, env, dmAad(env.id, env.from, env.to.dm)));
}

export function encryptRoomMessage(roomKey: CryptoKey, meta: RoomMeta, msg: PlainInput, iv?: Uint8Array): Promise<Sealed> {
  return seal(roomKey, encodePlaintext(msg), roomAad(meta.id, meta.from, meta.roomId, meta.keyId), iv);
}

export async function decryptRoomMessage(roomKey: CryptoKey, env: EnvelopeLike): Promise<Plain> {
  if (!('room' in env.to)) throw new TypeError('not a room envelope');
  return decodePlaintext(await open(roomKey, env, roomAad(env.id, env.from, env.to.room, env.keyId)));
}
