/**
 * `svc send`: one text to a contact or a room through the SDK's outbox, which paces it under the
 * account's message limit, waits out a 429, retries a network failure and holds it on a changed
 * key. svc exits 0 once the service accepted it; otherwise the message leaves the outbox and svc
 * exits non-zero with one line, so a script's retry never sends it twice.
 *
 * What is sent is a Payload, so another kind (an attachment) is one more case of it and of
 * `queue`, not another command.
 */
import { openAsBlob } from 'node:fs';
import { basename, extname } from 'node:path';
import { isSdkError, type ChatId, type ChatMessage } from '@svc/sdk';
import { takeRoomAnnouncements } from '../catch-up.js';
import { openDevice, resolveChat, type Device } from '../device.js';
import { CliError, EXIT, explain } from '../errors.js';
import type { Out } from './out.js';

export type Payload = { kind: 'text'; text: string } | { kind: 'file'; path: string; caption?: string };

export interface SendOptions {
  to: string;
  room: boolean;
  payload: Payload;
  /** Give up after this long (ms) and exit non-zero. */
  timeoutMs: number;
}

/** Puts the payload into the outbox; resolves with the record that tracks it. */
async function queue(dev: Device, chat: ChatId, p: Payload): Promise<ChatMessage> {
  switch (p.kind) {
    case 'text':
      return dev.conv.sendText(chat, p.text);
    case 'file': {
      // A Blob over the file on disk: read a part at a time as the upload goes, never whole.
      let file: Blob;
      try {
        file = await openAsBlob(p.path);
      } catch {
        throw new CliError(`cannot read ${p.path}`, EXIT.usage);
      }
      return dev.conv.sendFile(chat, { file, name: basename(p.path), mime: mimeOf(p.path), ...(p.caption ? { caption: p.caption } : {}) });
    }
  }
}

/** The MIME type of a few common kinds of file, by name; any other is application/octet-stream. */
function mimeOf(path: string): string {
  const types: Record<string, string> = {
    txt: 'text/plain',
    log: 'text/plain',
    csv: 'text/csv',
    json: 'application/json',
    pdf: 'application/pdf',
    zip: 'application/zip',
    gz: 'application/gzip',
    png: 'image/png',
    jpg: 'image/jpeg',
    jpeg: 'image/jpeg',
  };
  return types[extname(path).slice(1).toLowerCase()] ?? 'application/octet-stream';
}

/** Resolves once the service accepted record `id`, rejects when it was refused or held; tells of waits. */
function accepted(dev: Device, out: Out, first: ChatMessage, timeoutMs: number): Promise<void> {
  let id = first.id;
  return new Promise<void>((resolve, reject) => {
    let shown = 0;
    const end = (f: () => void) => {
      off();
      clearInterval(tick);
      clearTimeout(limit);
      f();
    };
    const look = (m: ChatMessage) => {
      if (m.id !== id) return;
      if (m.state === 'sent') return end(resolve);
      if (m.state === 'failed') return end(() => reject(new CliError(`not sent: ${(m.note ?? 'refused').replace(/\.$/, '')}`, EXIT.failed)));
      const item = dev.conv.outbox.pending.find((i) => i.id === id);
      if (item?.state === 'held')
        return end(() => reject(new CliError(`not sent: ${(item.note ?? 'key changed').replace(/\.$/, '')}`, EXIT.keyChanged)));
    };
    const off = dev.conv.on((c) => {
      // A late retry goes under a new envelope id: follow the record there.
      if (c.removed?.includes(id)) {
        const moved = c.changed.find((m) => m.mid === first.mid);
        if (moved) id = moved.id;
      }
      for (const m of c.changed) look(m);
    });
    // The pacer says how long the message waits for the account's limit: shown, not hidden.
    const tick = setInterval(() => {
      const wait = dev.conv.waitMs(id);
      if (wait !== null && wait > 1500 && Date.now() - shown > 10_000) {
        shown = Date.now();
        out.info(`waiting ${Math.ceil(wait / 1000)} s for the account's message limit`);
      }
    }, 250);
    const limit = setTimeout(
      () => end(() => reject(new CliError(`not sent within ${Math.round(timeoutMs / 1000)} s (the service did not accept it)`, EXIT.failed))),
      timeoutMs,
    );
  });
}

/** Takes a message that did not go out of the outbox; its record says "Not sent" and why. */
async function unsent(dev: Device, msg: ChatMessage, why: string): Promise<void> {
  const ids = [msg.id, ...dev.conv.outbox.pending.filter((i) => 'mid' in i.plain && i.plain.mid === msg.mid).map((i) => i.id)];
  for (const id of ids) await dev.conv.outbox.drop(id);
  for (const id of ids) {
    const cur = await dev.store.get(id);
    if (cur && cur.state !== 'sent') await dev.store.put({ ...cur, state: 'failed', note: why });
  }
}

export async function send(env: NodeJS.ProcessEnv, out: Out, o: SendOptions): Promise<void> {
  const dev = await openDevice(env);
  let msg: ChatMessage | undefined;
  try {
    const { chat } = await resolveChat(dev, o.to, o.room);
    // Asked first, so an unknown contact, an ended session, an unreachable service or a changed
    // key is one clear line now rather than a message waiting in the outbox.
    await dev.m.api.me();
    if (chat.startsWith('dm:')) await dev.m.peerKey(o.to, 'send');
    await dev.conv.load();
    await takeRoomAnnouncements(dev, chat);
    msg = await queue(dev, chat, o.payload);
    await accepted(dev, out, msg, o.timeoutMs);
  } catch (e) {
    const failure = isSdkError(e, 'unknown_user') ? new CliError(`no such user: ${o.to}`, EXIT.failed) : explain(e, dev.server);
    if (msg) await unsent(dev, msg, failure.message).catch(() => undefined);
    throw failure;
  } finally {
    await dev.close();
  }
}
