/**
 * Opening a device's event stream: register it (replacing an older one), reset push-pending,
 * replay the queue as `msg` events, then `ready`. Live events that arrive during the replay
 * are held and sent after it, skipping those the replay already carried.
 */
import { ApiError, eventData } from '@svc/protocol';
import { StreamConn, type StreamSink } from '../bus/streams.js';
import type { StreamEvent } from '../bus/types.js';
import type { Caller, Deps } from './deps.js';

const REPLAY_PAGE = 1000;
const READY: StreamEvent = { event: 'ready', data: eventData('ready', {}) };

export async function openStream(deps: Deps, caller: Caller, deviceId: string, sink: StreamSink): Promise<StreamConn> {
  const conn = new StreamConn(deviceId, caller.nick, caller.sessionId, sink);
  await deps.bus.attach(conn);
  try {
    await stillAllowed(deps, caller, deviceId);
    await replay(deps, conn, deviceId);
  } catch (err) {
    // Refused, or the store failed mid-way: unregister the stream (the caller answers or cuts the response).
    deps.bus.detach(conn);
    throw err;
  }
  return conn;
}

/**
 * The session and the device were checked before the stream was attached. A logout, password
 * change or deletion that ended either in between closed the streams it found, and this one was
 * not among them yet; so both are read again now that it is attached: such a close either comes
 * after this read, and finds the stream, or before it, and the stream is refused here (401
 * `unauthenticated` or 403 `unknown_device`, as the checks themselves would answer).
 */
async function stillAllowed(deps: Deps, caller: Caller, deviceId: string): Promise<void> {
  const [session, owner] = await Promise.all([deps.store.getSession(caller.sessionId), deps.store.deviceOwner(deviceId)]);
  if (session === null) throw new ApiError('unauthenticated');
  if (owner !== caller.nick) throw new ApiError('unknown_device');
}

async function replay(deps: Deps, conn: StreamConn, deviceId: string): Promise<void> {
  await deps.store.deviceConnected(deviceId, deps.now());
  const replayed = new Set<string>();
  let after = 0;
  for (;;) {
    const page = await deps.store.readQueue(deviceId, after, REPLAY_PAGE);
    for (const e of page) {
      // A client that went away mid-replay must not make us read and write the rest of its queue.
      if (conn.closed || conn.gone) return;
      await conn.writeReplay({ event: 'msg', data: e.json, id: e.id });
      replayed.add(e.id);
      after = e.seq;
    }
    if (page.length < REPLAY_PAGE) break;
  }
  if (!conn.closed) conn.finishReplay(replayed, READY);
}

export function closeStream(deps: Deps, conn: StreamConn): void {
  deps.bus.detach(conn);
  conn.close();
}
