/**
 * The request bodies of the API: each route's body type and the check of its fields, in the order
 * docs/API.md gives for that route. A check takes the parsed JSON object and returns the typed
 * request holding only the known fields, or throws the refusal (`invalid` naming the field, or the
 * route's own code such as `invalid_nick`). Checks that need the service's state (rights, business
 * rules) are not here: they come after these, in the service.
 */
import { b64urlDecodedLength, decodeB64urlLenient, encodeB64url, isB64url } from './b64url.js';
import { ApiError, invalid } from './errors.js';
import { ATTACHMENT, LIMITS } from './limits.js';
import type {
  AttachmentPartRequest,
  CreateRoomRequest,
  EncryptedKey,
  FinishAttachmentRequest,
  Kdf,
  LoginRequest,
  MembersRequest,
  PasswordRequest,
  PushSubscriptionInput,
  RegisterRequest,
  SendMessageRequest,
  Target,
  WrappedKey,
} from './types.js';
import { isUlid } from './ulid.js';
import {
  isAuthKey,
  isB64urlOfLength,
  isCt,
  isDeviceId,
  isEncryptedKey,
  isId16,
  isIv,
  isKdf,
  isNick,
  isPlainObject,
  isPublicKey,
  isPushSubscription,
  isRoomName,
  isStorableText,
  isWrappedKeyList,
  pickKdf,
} from './validate.js';

type Body = Record<string, unknown>;

export interface DeleteMeRequest {
  authKey: string;
}
export interface AddDeviceRequest {
  id: string;
}
export interface SetPushRequest {
  subscription: PushSubscriptionInput;
}
export interface AddContactRequest {
  nick: string;
}
export interface AckRequest {
  ids: string[];
}

/** An invite code is short free text. */
const MAX_INVITE_CHARS = 128;

/** The key material shared by register and password, checked in this order. */
function keyMaterial(b: Body, authField: string): { authKey: string; kdf: Kdf; encryptedKey: EncryptedKey } {
  if (!isAuthKey(b[authField])) throw invalid(authField);
  if (!isKdf(b.kdf)) throw invalid('kdf');
  if (!isEncryptedKey(b.encryptedKey)) throw invalid('encryptedKey');
  return { authKey: b[authField], kdf: pickKdf(b.kdf), encryptedKey: { iv: b.encryptedKey.iv, ct: b.encryptedKey.ct } };
}

const wrappedKeys = (keys: WrappedKey[]): WrappedKey[] => keys.map((k) => ({ to: k.to, iv: k.iv, ct: k.ct }));

/** A list of nicks; duplicates collapse to one. */
function nickList(v: unknown, field: string): string[] {
  if (!Array.isArray(v) || !v.every(isNick)) throw invalid(field);
  return [...new Set(v)];
}

export function checkRegister(b: Body): RegisterRequest {
  if (!isNick(b.nick)) throw new ApiError('invalid_nick');
  const { authKey, kdf, encryptedKey } = keyMaterial(b, 'authKey');
  if (!isPublicKey(b.publicKey)) throw invalid('publicKey');
  const inviteGiven = b.invite !== undefined && b.invite !== null && b.invite !== '';
  if (inviteGiven && (typeof b.invite !== 'string' || b.invite.length > MAX_INVITE_CHARS || !isStorableText(b.invite))) throw invalid('invite');
  return { nick: b.nick, authKey, kdf, publicKey: b.publicKey, encryptedKey, ...(inviteGiven ? { invite: b.invite as string } : {}) };
}

export function checkLogin(b: Body): LoginRequest {
  if (!isNick(b.nick)) throw invalid('nick');
  if (!isAuthKey(b.authKey)) throw invalid('authKey');
  return { nick: b.nick, authKey: b.authKey };
}

export function checkDeleteMe(b: Body): DeleteMeRequest {
  if (!isAuthKey(b.authKey)) throw invalid('authKey');
  return { authKey: b.authKey };
}

export function checkPassword(b: Body): PasswordRequest {
  if (!isAuthKey(b.authKey)) throw invalid('authKey');
  const next = keyMaterial(b, 'newAuthKey');
  return { authKey: b.authKey, newAuthKey: next.authKey, kdf: next.kdf, encryptedKey: next.encryptedKey };
}

export function checkAddDevice(b: Body): AddDeviceRequest {
  if (!isDeviceId(b.id)) throw invalid('id');
  return { id: b.id };
}

/**
 * The subscription's shape (the service adds its check of a literal IP host, which needs its
 * address classifier, under the same error). Only endpoint, p256dh and auth are kept, the keys
 * re-encoded unpadded.
 */
export function checkSetPush(b: Body): SetPushRequest {
  const sub = b.subscription;
  if (!isPushSubscription(sub) || !isStorableText(sub.endpoint)) throw invalid('subscription');
  return {
    subscription: {
      endpoint: sub.endpoint,
      keys: { p256dh: encodeB64url(decodeB64urlLenient(sub.keys.p256dh)!), auth: encodeB64url(decodeB64urlLenient(sub.keys.auth)!) },
    },
  };
}

export function checkAddContact(b: Body): AddContactRequest {
  if (!isNick(b.nick)) throw invalid('nick');
  return { nick: b.nick };
}

export function checkCreateRoom(b: Body): CreateRoomRequest {
  if (!isId16(b.id)) throw invalid('id');
  if (!isRoomName(b.name)) throw invalid('name');
  if (!isId16(b.keyId)) throw invalid('keyId');
  if (!isWrappedKeyList(b.keys)) throw invalid('keys');
  return { id: b.id, name: b.name, keyId: b.keyId, keys: wrappedKeys(b.keys) };
}

export function checkMembers(b: Body): MembersRequest {
  const add = nickList(b.add, 'add');
  const remove = nickList(b.remove, 'remove');
  if (remove.some((n) => add.includes(n))) throw invalid('remove');
  if (!isId16(b.keyId)) throw invalid('keyId');
  if (!isWrappedKeyList(b.keys)) throw invalid('keys');
  return { add, remove, keyId: b.keyId, keys: wrappedKeys(b.keys) };
}

export function checkSendMessage(b: Body): SendMessageRequest {
  if (!isUlid(b.id)) throw invalid('id');
  const to = b.to;
  if (!isPlainObject(to) || 'dm' in to === 'room' in to || Object.keys(to).length !== 1) throw invalid('to');
  let target: Target;
  if ('dm' in to) {
    if (!isNick(to.dm)) throw invalid('to');
    if (b.keyId !== 'dm') throw invalid('keyId');
    target = { dm: to.dm };
  } else {
    if (!isId16(to.room)) throw invalid('to');
    if (!isId16(b.keyId)) throw invalid('keyId');
    target = { room: to.room };
  }
  if (!isIv(b.iv)) throw invalid('iv');
  if (!isCt(b.ct)) throw invalid('ct');
  return { id: b.id, to: target, keyId: b.keyId, iv: b.iv, ct: b.ct };
}

export function checkAck(b: Body): AckRequest {
  const ids = b.ids;
  if (!Array.isArray(ids) || ids.length > LIMITS.ackBatch || !ids.every((x) => typeof x === 'string')) throw invalid('ids');
  return { ids: ids };
}

/** A part's data: 1 to ATTACHMENT.partBytes bytes of base64url. */
export function checkAttachmentPart(b: Body): AttachmentPartRequest {
  const d = b.data;
  if (!isB64url(d) || d.length === 0 || b64urlDecodedLength(d) > ATTACHMENT.partBytes) throw invalid('data');
  return { data: d };
}

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 1;

/** The finish of an upload: the part count, the size in bytes and the SHA-256, in this order. */
export function checkFinishAttachment(b: Body): FinishAttachmentRequest {
  if (!isCount(b.parts)) throw invalid('parts');
  if (!isCount(b.size)) throw invalid('size');
  if (!isB64urlOfLength(b.sha256, 32)) throw invalid('sha256');
  return { parts: b.parts, size: b.size, sha256: b.sha256 };
}
