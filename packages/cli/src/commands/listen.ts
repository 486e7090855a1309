/**
 * `svc listen`: prints each message that arrives for this device, and acknowledges it to the
 * service only after it is stored and printed, so a crash or a closed pipe loses nothing: the
 * service sends it again and svc prints what it had stored but not printed yet. The SDK's event
 * stream reconnects on its own when the service restarts or the network drops.
 */
import type { Envelope } from '@svc/protocol';
import type { ChatMessage } from '@svc/sdk';
import { openDevice } from '../device.js';
import { CliError, EXIT, explain } from '../errors.js';
import type { Out } from './out.js';
import { format, shown } from './show.js';

const PRINTED_KEY = 'cli|printed';
/** Ids of the messages printed last: more than a replay can hold before its acks went out. */
const PRINTED_KEEP = 1000;

export interface ListenOptions {
  json: boolean;
  once: boolean;
  receipts: boolean;
}

/** Another's message, a line of a room's log or one that did not open: what a listener wants to see. */
const worthPrinting = (m: ChatMessage, me: string) => m.from !== me;

export async function listen(env: NodeJS.ProcessEnv, out: Out, o: ListenOptions): Promise<void> {
  const dev = await openDevice(env, { receipts: o.receipts });
  const printed = new Set(((await dev.store.getMeta(PRINTED_KEY)) as string[] | undefined) ?? []);
  let stopping = false;
  let finish: (e?: unknown) => void = () => undefined;
  const ended = new Promise<void>((resolve, reject) => {
    finish = (e) => (e === undefined ? resolve() : reject(explain(e)));
  });

  const print = async (m: ChatMessage) => {
    await out.line(format(shown(m, dev.m), o.json));
    printed.add(m.id);
    await dev.store.putMeta(PRINTED_KEY, [...printed].slice(-PRINTED_KEEP));
    if (o.receipts && m.kind === 'text') await dev.conv.markRead(m.chat, [m]);
  };

  const onMsg = async (env: Envelope) => {
    // After --once printed its message, the rest stays unacknowledged for the next listener.
    if (stopping) throw new Error('stopping');
    const r = await dev.conv.receive(env);
    const m = r.added ?? (r.ignored === 'already stored' ? await dev.store.get(env.id) : undefined);
    if (!m || printed.has(m.id) || !worthPrinting(m, dev.m.nick)) return;
    await print(m);
    if (o.once) {
      stopping = true;
      finish();
    }
  };

  await dev.conv.load();
  const stream = dev.m.events({
    onMsg,
    onReady: () => dev.conv.online(),
    onState: (state, info) => {
      if (state === 'live') out.info('listening');
      if (state === 'offline') out.info(`connection lost; trying again in ${Math.ceil((info.retryInMs ?? 0) / 1000)} s`);
      if (state === 'closed' && info.reason && info.reason !== 'closed') finish(explain(new CliError(closedWhy(info.reason), EXIT.auth)));
    },
    onError: (e) => {
      if (e instanceof Error && e.message === 'stopping') return;
      out.info(explain(e, dev.server).message);
    },
    backoffMs: { initial: 500, max: 10_000 },
  });
  const stop = () => finish();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  stream.start();
  try {
    await ended;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await stream.close();
    await dev.close();
  }
}

function closedWhy(reason: string): string {
  if (reason === 'unauthenticated') return 'the session ended (signed out, or the password changed): run svc login again';
  return 'this device was removed from the account: run svc login again';
}
