/**
 * The history transfer's types and the state each side keeps in the store (transfer.ts runs the
 * protocol; docs/CRYPTO.md).
 */
import type { KeptFilesSource } from '../attachments/files.js';
import type { ChatId } from '../envelopes.js';
import type { Change } from './changes.js';
import type { ChatMessage, OutboxItem } from './model.js';
import type { ArchivePart, HistoryPlain, PlainInput } from '../wire/plaintext.js';
import type { ArchiveFile } from './transfer-archive.js';
import type { ConversationStore } from './store.js';

/** What a transfer needs from the account, its outbox and its store (transfer-link.ts builds it from a Messenger). */
export interface TransferLink {
  readonly me: string;
  readonly deviceId: string;
  /** Messenger.transferKey. */
  readonly key: CryptoKey;
  readonly store: ConversationStore;
  now(): number;
  /** The account's private room, found or created. */
  carrier(): Promise<ChatId>;
  /** Whether a message arrived in such a room. */
  isCarrier(chat: ChatId): boolean;
  /** Queues a message at priority 'bulk'. */
  enqueue(chat: ChatId, plain: PlainInput): Promise<void>;
  pending(): readonly OutboxItem[];
  drop(id: string): Promise<void>;
  notify(c: Change): void;
  /** The ids of the account's devices the service lists now (GET /api/devices). */
  devices(): Promise<string[]>;
  /** The attachment store, for the history as an archive (transfer-archive.ts); without it, chunks go as messages. */
  archive?: ArchiveLink;
}

/** What the archive transfer needs of the attachment store (transfer-link.ts builds it from the SDK's uploader). */
export interface ArchiveLink {
  /** The largest plaintext of one attachment; null when the service takes no files. */
  maxBytes(): Promise<number | null>;
  /** A new attachment of `plainSize` bytes: its id and key (its progress kept, so a reload resumes it). */
  create(plainSize: number): Promise<{ id: string; key: string }>;
  /** Uploads (or resumes) attachment `id` from `source`, which gives the same bytes each time. */
  upload(part: { id: string; key: string; plainSize: number }, source: () => AsyncIterable<Uint8Array>): Promise<{ sha256: string; size: number }>;
  /** The attachment's plaintext, checked piece by piece (attachments/download.ts). */
  download(part: ArchivePart): AsyncIterable<Uint8Array>;
  /** Deletes an attachment of this account (done with, or given up). */
  discard(id: string): Promise<void>;
  /** The files kept on this device: sent with the history, and where received ones go. */
  kept?: KeptFilesSource;
  /** Aborted when the app stops (sign-out, the page closing): uploads and downloads stop with it. */
  signal?: AbortSignal;
}

export interface TransferProgress {
  role: 'send' | 'receive';
  transfer: string;
  /** The device the history goes to. */
  device: string;
  /** Sending: chunks the service accepted; receiving: chunks checked and merged. */
  chunks: { done: number; total: number };
  records: { done: number; total: number };
  /** Records left out because they failed the check: on the sender, before sealing; on the receiver, on reading. */
  dropped: number;
  /** `done`: the receiver holds every chunk (on the sender: it said so). */
  state: 'active' | 'done';
  /** Files kept on the sending device that travel with the history (an archive transfer). */
  files?: { done: number; total: number };
  /** Why the transfer stopped before its end (a damaged archive, a service that refused it). */
  error?: string;
}

export interface TransferRequest {
  /** The device asking for history. */
  device: string;
  /** The request's fresh nonce, which the offer echoes. */
  nonce: string;
  at: number;
  /** The asking device takes the history as an archive in the attachment store. */
  archive?: true;
}

export type TransferEvent =
  | { type: 'request'; request: TransferRequest }
  | { type: 'progress'; progress: TransferProgress }
  /** A message of the transfer was refused and nothing of it imported (for logs and tests). */
  | { type: 'refused'; kind: HistoryPlain['type']; transfer?: string; seq?: number; why: string };

export interface SendState {
  transfer: string;
  device: string;
  chat: ChatId;
  total: number;
  /** Whole records per chunk. */
  counts: number[];
  digest: string;
  /** Records of the store left out because they failed the check. */
  dropped?: number;
  sent: number;
  createdAt: number;
  confirmed: boolean;
  lastAck?: { next: number; at: number };
  /** An archive transfer: what goes into the attachment store, and whether its message went. */
  archive?: SendArchive;
  error?: string;
}

export interface SendArchive {
  nonce: string;
  records: number;
  files: ArchiveFile[];
  /** The attachments, each [start, start + plainSize) of the archive; sha256 and size once uploaded. */
  parts: ({ id: string; key: string; plainSize: number; start: number } & Partial<Pick<ArchivePart, 'sha256' | 'size'>>)[];
  /** The history-archive message is queued. */
  pointed: boolean;
}

export interface ReceiveArchive {
  parts: ArchivePart[];
  digest: string;
  files: number;
  filesDone: number;
  /** Where the next frame starts in the archive (a resumed download starts from its attachment). */
  offset: number;
}

export interface ReceiveState {
  transfer: string;
  total: number;
  records: number;
  next: number;
  /** b64url of the chain value after chunk next-1. */
  hash: string;
  recordsDone: number;
  /** Records left out because they failed the check (counted in recordsDone too). */
  dropped?: number;
  /** Every chunk is taken (the last one completes the transfer). */
  done: boolean;
  /** The sender's `history-done` came and matched the chain; another one is a replay. */
  confirmed?: boolean;
  /** A record whose text comes in pieces, while it does. */
  carry?: { rec: ChatMessage | null; text: string };
  lastAck?: { next: number; at: number };
  archive?: ReceiveArchive;
  error?: string;
}

export const K_SENDS = 'transfer.sends';
export const K_CHUNKS = 'transfer.chunks.';
export const K_RECEIVE = 'transfer.receive';
export const K_REQUESTS = 'transfer.requests';
/** A sender keeps the chunks this long for a receiver that asks again. */
export const TRANSFER_KEEP_MS = 7 * 24 * 60 * 60_000;
/** The same "next" is not acknowledged twice within this time. */
export const ACK_AGAIN_MS = 30_000;
