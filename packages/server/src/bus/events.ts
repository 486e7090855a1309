/**
 * The events a stream carries and the bus delivers, as shapes: the bus (types.ts) and the streams
 * of this process (streams.ts) both speak them.
 */
import type { EnvelopeJson, EventJson, EventName } from '@svc/protocol';

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
