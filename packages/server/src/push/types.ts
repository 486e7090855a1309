/** Push delivery, kept behind an interface so the send path does not wait for it. */
import type { PushTarget } from '../store/types.js';
import type { PushPayload } from '@svc/protocol';

export interface Pusher {
  /** Queues notifications for devices whose push-pending flag was just claimed; never throws, never waits. */
  enqueue(targets: PushTarget[], payload: PushPayload): void;
  /** Drains or drops what is queued, for shutdown. */
  close(): Promise<void>;
}
