/** Event stream names and payloads (docs/API.md §3). */
import type { Envelope, Room } from './types.js';

export const EVENT_NAMES = ['msg', 'ready', 'room', 'room_left'] as const;
export type EventName = (typeof EVENT_NAMES)[number];

export interface EventPayloads {
  msg: Envelope;
  ready: Record<string, never>;
  room: Room;
  room_left: { id: string };
}

/** An event's data as the stream carries it: the payload of that event, as JSON. */
export function eventData<E extends EventName>(_event: E, payload: EventPayloads[E]): string {
  return JSON.stringify(payload);
}

/** The SSE comment sent as keep-alive. */
export const PING_FRAME = ': ping\n\n';
