/** Event stream names and payloads (docs/API.md). */
import type { Envelope, Room } from './types.js';

export const EVENT_NAMES = ['msg', 'ready', 'room', 'room_left'] as const;
export type EventName = (typeof EVENT_NAMES)[number];

export interface EventPayloads {
  msg: Envelope;
  ready: Record<string, never>;
  room: Room;
  room_left: { id: string };
}

/**
 * An event's data as the stream carries it: the payload of event `E` as JSON text, made by
 * `eventData` or `envelopeJson` only. The brand keeps a bare string, or another event's data, from
 * being passed where these bytes are expected.
 */
export type EventJson<E extends EventName> = string & { readonly __eventJson: E };

/**
 * An envelope as JSON, in the field order of docs/API.md. A send serialises its envelope once:
 * the store keeps these bytes, the live `msg` event of every target carries them, and the replay
 * reads them back, so a replayed envelope and a live one are the same bytes.
 */
export type EnvelopeJson = EventJson<'msg'>;

/** The data of an event other than `msg` (whose data is `envelopeJson`). */
export function eventData<E extends Exclude<EventName, 'msg'>>(_event: E, payload: EventPayloads[E]): EventJson<E> {
  return JSON.stringify(payload) as EventJson<E>;
}

/** Envelope JSON in the field order of docs/API.md: id, to, from, keyId, iv, ct, ts. */
export function envelopeJson(e: Envelope): EnvelopeJson {
  return JSON.stringify({ id: e.id, to: e.to, from: e.from, keyId: e.keyId, iv: e.iv, ct: e.ct, ts: e.ts }) as EnvelopeJson;
}
