/**
 * The typed events of the Session (session.ts), the one owner of a signed-in account's state:
 * what changed, for the views that wait on it. Only the Session emits them.
 */
import type { Change, ConnectionState, TransferEvent } from '@svc/sdk';
import type { ChatSummary } from './chats.js';

export type EndReason = 'signed_out' | 'session_ended' | 'device_removed' | 'account_deleted';

export interface SessionEvents extends Record<string, unknown> {
  chats: ChatSummary[];
  /** Records of the conversation store that are new, changed or gone. */
  change: Change;
  conn: ConnectionState;
  trust: undefined;
  rooms: undefined;
  /** A chat went away (room deleted, left, or removed from it). */
  gone: string;
  /** A chat's mute changed, here or on another of the account's devices (the chat id). */
  mute: string;
  /** A room's membership record or its standing against the service's list changed (the room id). */
  membership: string;
  ended: EndReason;
  /** Something failed in the background that the user should know about. */
  problem: string;
  /** The history transfer: a new device asks, and how far a transfer is (components/transfer.ts). */
  transfer: TransferEvent;
}
