/**
 * The plaintext types inside every message's `ct`, their fields and their limits (plaintext.ts
 * checks, encodes and decodes them; docs/CRYPTO.md).
 */
import type { AttachmentFields, PhotoFields, VoiceFields } from './attachment-plain.js';

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
/** More parts than any device's membership records need (one part holds dozens of rooms). */
export const MAX_RECORD_PARTS = 1_000;
/** More chunks than any history needs (a chunk holds hundreds of records). */
export const MAX_TRANSFER_CHUNKS = 100_000;
/** More attachments than an archive needs: at the default limit of 25 MiB each, far above an account's quota. */
export const MAX_ARCHIVE_PARTS = 128;
/** More files than a device keeps. */
export const MAX_ARCHIVE_FILES = 1_000_000;
