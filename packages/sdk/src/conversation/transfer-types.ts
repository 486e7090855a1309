/**
 * The history transfer's types and the state each side keeps in the store (transfer.ts runs the
 * protocol; docs/CRYPTO.md, "History transfer").
 */
import type { ChatId } from '../messages.js';
import type { Change } from './conversations.js';
import type { ChatMessage, OutboxItem } from './model.js';
import type { HistoryPlain, PlainInput } from './plaintext.js';
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
}

export interface TransferRequest {
  /** The device asking for history. */
  device: string;
  /** The request's fresh nonce, which the offer echoes. */
  nonce: string;
  at: number;
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
}

export const K_SENDS = 'transfer.sends';
export const K_CHUNKS = 'transfer.chunks.';
export const K_RECEIVE = 'transfer.receive';
export const K_REQUESTS = 'transfer.requests';
/** A sender keeps the chunks this long for a receiver that asks again. */
export const TRANSFER_KEEP_MS = 7 * 24 * 60 * 60_000;
/** The same "next" is not acknowledged twice within this time. */
export const ACK_AGAIN_MS = 30_000;
