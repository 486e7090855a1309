/**
 * The event bus: fan-out of events to device streams and stream control, wherever the stream
 * is open. The memory bus serves one process; the Redis bus relays between instances, and an
 * event that arrives from the bus goes to local streams only, never relayed again.
 */
import type { EnvelopeJson, EventJson, EventName } from '@svc/protocol';
import type { StreamConn } from './streams.js';

/**
 * One event as a stream carries it: its name and its data, serialised once however many streams
 * carry it. The HTTP layer makes the bytes of the stream from it (`http/sse.ts`).
 */
export type StreamEvent = MsgEvent | { [E in OtherEventName]: { event: E; data: EventJson<E>; id?: undefined } }[OtherEventName];

/** A `msg` carries its envelope id twice: in its data, and as the SSE `id:` field (docs/API.md). */
interface MsgEvent {
  event: 'msg';
  data: EnvelopeJson;
  id: string;
}

type OtherEventName = Exclude<EventName, 'msg'>;

/** One event for a set of devices. */
export type Delivery = StreamEvent & { devices: string[] };

/** Which streams to close: those of these sessions, of these devices, or of these accounts. */
export interface CloseSelector {
  sessions?: string[];
  devices?: string[];
  nicks?: string[];
}

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
