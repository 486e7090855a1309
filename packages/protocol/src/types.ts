/** The resources and request bodies of docs/API.md, as the wire carries them. */

export type Ms = number;

export interface Kdf {
  alg: 'argon2id';
  salt: string;
  m: number;
  t: number;
  p: number;
}

export interface EncryptedKey {
  iv: string;
  ct: string;
}

export type Target = { dm: string } | { room: string };

/** JSON field order: id, to, from, keyId, iv, ct, ts. */
export interface Envelope {
  id: string;
  to: Target;
  from: string;
  keyId: string;
  iv: string;
  ct: string;
  ts: Ms;
}

export interface SendMessageRequest {
  id: string;
  to: Target;
  keyId: string;
  iv: string;
  ct: string;
}

export interface SendMessageResponse {
  id: string;
  ts: Ms;
}

export interface RoomKey {
  keyId: string;
  from: string;
  iv: string;
  ct: string;
}

export interface WrappedKey {
  to: string;
  iv: string;
  ct: string;
}

export interface Room {
  id: string;
  name: string;
  owner: string;
  members: string[];
  createdAt: Ms;
  keys: RoomKey[];
  needsRekey: boolean;
}

export interface CreateRoomRequest {
  id: string;
  name: string;
  keyId: string;
  keys: WrappedKey[];
}

export interface MembersRequest {
  add: string[];
  remove: string[];
  keyId: string;
  keys: WrappedKey[];
}

export interface PushSubscriptionInput {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

export interface PushPayload {
  title: string;
  body: string;
  chat: string;
}

export interface ConfigResponse {
  revision: string;
  commitTime: Ms | null;
  registration: 'open' | 'invite';
  vapidPublicKey: string;
}

export interface RegisterRequest {
  nick: string;
  authKey: string;
  kdf: Kdf;
  publicKey: string;
  encryptedKey: EncryptedKey;
  invite?: string;
}

export interface LoginRequest {
  nick: string;
  authKey: string;
}

export interface LoginResponse {
  nick: string;
  publicKey: string;
  encryptedKey: EncryptedKey;
  kdf: Kdf;
}

export interface MeResponse extends LoginResponse {
  createdAt: Ms;
}

export interface PasswordRequest {
  authKey: string;
  newAuthKey: string;
  kdf: Kdf;
  encryptedKey: EncryptedKey;
}

export interface UserResponse {
  nick: string;
  publicKey: string;
}

export interface Device {
  id: string;
  createdAt: Ms;
  lastSeenAt: Ms | null;
  push: boolean;
  online: boolean;
}

export interface Contact {
  nick: string;
  publicKey: string;
  createdAt: Ms;
}
