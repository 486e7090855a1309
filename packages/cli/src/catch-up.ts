/**
 * What a one-shot `svc send --room` needs first: the room's membership record. It starts from the
 * owner's announcement that added this account, which waits in this device's queue; without it
 * the SDK holds every message to the room (no key is trusted for a room nobody announced). So the
 * send reads the queue once, up to `ready`, and takes in the `members` announcements only. It
 * acknowledges nothing: `svc listen` still prints every message of the queue later, and taking an
 * announcement again there changes nothing.
 */
import { SseParser, type ChatId, type DecryptedMessage } from '@svc/sdk';
import type { Envelope } from '@svc/protocol';
import type { Device } from './device.js';

/** Reads the queued announcements of rooms this device holds no record of; gives up after `timeoutMs`. */
export async function takeRoomAnnouncements(dev: Device, chat: ChatId, timeoutMs = 15_000): Promise<void> {
  if (!chat.startsWith('room:') || (await dev.conv.membership.record(chat.slice('room:'.length)))) return;
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), timeoutMs);
  try {
    const res = await dev.m.api.openEvents(undefined, stop.signal);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    const taken: Promise<unknown>[] = [];
    let ready = false;
    const parser = new SseParser((e) => {
      if (e.event === 'ready') ready = true;
      else if (e.event === 'msg') taken.push(take(dev, JSON.parse(e.data) as Envelope));
    });
    while (!ready) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.push(value);
    }
    await Promise.all(taken);
  } catch (e) {
    // Cut short (the time is up, or the connection dropped): the send goes on and the SDK says
    // why the message waits, as it would without this read.
    if (!stop.signal.aborted) throw e;
  } finally {
    clearTimeout(timer);
    stop.abort();
  }
}

async function take(dev: Device, env: Envelope): Promise<void> {
  const d: DecryptedMessage = await dev.m.decryptEnvelope(env);
  if (d.ok && d.plain.type === 'members') await dev.conv.membership.take(d as Parameters<typeof dev.conv.membership.take>[0]);
}
