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
  /** The attachment store's limits, or null when the service runs with ATTACHMENTS=off. */
  attachments: AttachmentLimits | null;
}

export interface AttachmentLimits {
  /** Bytes of one part's data; every part of a finished attachment but its last holds exactly this. */
  partBytes: number;
  /** Ciphertext bytes of one attachment at most. */
  maxBytes: number;
  /** Bytes of live attachments one account may keep (unfinished uploads count). */
  quotaBytes: number;
  /** Part bytes one nick may upload per minute, counted in whole parts. */
  uploadBytesPerMin: number;
  /** Days a finished attachment is kept. */
  ttlDays: number;
}

/** One part of an attachment upload: its ciphertext bytes as base64url. */
export interface AttachmentPartRequest {
  data: string;
}

/** The end of an upload: what the service checks the parts against. */
export interface FinishAttachmentRequest {
  /** Number of parts, numbered 0 to parts - 1. */
  parts: number;
  /** Ciphertext bytes in all. */
  size: number;
  /** SHA-256 of the whole ciphertext, base64url. */
  sha256: string;
}

/** A finished attachment. */
export interface AttachmentInfo {
  id: string;
  size: number;
  /** When it was finished; it is kept for the service's ATTACHMENT_TTL_DAYS from then. */
  finishedAt: Ms;
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
