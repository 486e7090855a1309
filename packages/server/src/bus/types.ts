/**
 * The event bus: fan-out of events to device streams and stream control, wherever the stream
 * is open. The memory bus serves one process; the Redis bus relays between instances, and an
 * event that arrives from the bus goes to local streams only, never relayed again.
 */
import type { CloseSelector, Delivery } from './events.js';
import type { StreamConn } from './streams.js';

export type { CloseSelector, Delivery, StreamEvent } from './events.js';

export interface Bus {
  /** Registers a stream opened on this process; any older stream of the device, anywhere, is closed. */
  attach(conn: StreamConn): Promise<void>;
  detach(conn: StreamConn): void;
  deliver(deliveries: Delivery[]): Promise<void>;
  closeStreams(sel: CloseSelector): Promise<void>;
  /** The subset of `deviceIds` that hold an open stream (on any instance). */
  onlineDevices(deviceIds: string[]): Promise<Set<string>>;
  close(): Promise<void>;
}
