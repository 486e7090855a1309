/**
 * Room keys: 32 random bytes under a fresh id16 keyId. The key is wrapped for each member m by
 * the wrapper w (the one who made it):
 *   AES-256-GCM(pair key(w, m), iv, key, AAD "svc/roomkey/v1|<roomId>|<keyId>|<m>")
 * so a wrapped key cannot be moved to another room, key id or member.
 */
import type { RoomKey, WrappedKey } from '@svc/protocol';
import { b64, randomBytes } from '../bytes.js';
import { importAesKey, open, seal, type Sealed } from './aead.js';

export const roomKeyAad = (roomId: string, keyId: string, member: string): string => `svc/roomkey/v1|${roomId}|${keyId}|${member}`;

export interface NewRoomKey {
  /** id16, b64url of 16 random bytes. */
  keyId: string;
  /** 32 random bytes. */
  key: Uint8Array;
}

export function newRoomKey(): NewRoomKey {
  return { keyId: b64(randomBytes(16)), key: randomBytes(32) };
}

/** The room key as a non-extractable AES-256-GCM key for messages. */
export function importRoomKey(key: Uint8Array): Promise<CryptoKey> {
  return importAesKey(key);
}

/** `pairKey` = pair key(wrapper, member). Returns a WrappedKey ready for the request's `keys`. */
export async function wrapRoomKey(
  pairKey: CryptoKey,
  roomId: string,
  keyId: string,
  member: string,
  key: Uint8Array,
  iv?: Uint8Array,
): Promise<WrappedKey> {
  const s = await seal(pairKey, key, roomKeyAad(roomId, keyId, member), iv);
  return { to: member, iv: s.iv, ct: s.ct };
}

/**
 * `pairKey` = pair key(me, wrapped.from); `member` is my own nick. Returns the room key as a
 * non-extractable CryptoKey; throws when the wrap does not open or is not 32 bytes.
 */
export async function unwrapRoomKey(
  pairKey: CryptoKey,
  roomId: string,
  keyId: string,
  member: string,
  wrapped: Sealed | RoomKey,
): Promise<CryptoKey> {
  const raw = await open(pairKey, wrapped, roomKeyAad(roomId, keyId, member));
  try {
    return await importRoomKey(raw);
  } finally {
    raw.fill(0);
  }
}
