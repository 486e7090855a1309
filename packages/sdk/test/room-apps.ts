/**
 * Devices run as an app runs them (Conversations over a store, fed by the event stream) against
 * a real server whose database a test rewrites behind their backs, as a hostile operator could.
 * Shared by the room membership tests.
 */
import { writeBehindService } from '@svc/testkit/harness';
import type { Envelope } from '@svc/protocol';
import { Conversations, MemoryStore } from '../src/index.js';
import { sleep, type Device, type TestServer } from './server.js';

export async function until(pred: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** What a hostile service does to its own database: the clients only see the result. */
export function tamper(server: TestServer, sql: string, ...args: unknown[]): Promise<void> {
  return writeBehindService(server.dbPath, sql, args);
}

/** Who holds a wrapped copy of room key `keyId`, from the server's own table. */
export async function keyHolders(server: TestServer, roomId: string, keyId: string): Promise<string[]> {
  const rows = await server.query(`SELECT member FROM room_keys WHERE room_id = '${roomId}' AND key_id = '${keyId}' ORDER BY member`);
  return rows.map((r) => String(r.member));
}

/** How many wrapped room keys the server holds for `member`. */
export async function keyRows(server: TestServer, roomId: string, member: string): Promise<number> {
  return (await server.query(`SELECT member FROM room_keys WHERE room_id = '${roomId}' AND member = '${member}'`)).length;
}

export interface App {
  d: Device;
  nick: string;
  conv: Conversations;
  store: MemoryStore;
  /** Every envelope the stream delivered. */
  envs: Envelope[];
  close(): Promise<void>;
}

/**
 * A device as an app runs it; warnings show at once (no grace), and a missing record is asked for
 * after `askRecordsAfterMs` (300 ms; undefined: the app's own delay).
 */
export async function run(d: Device, store = new MemoryStore(), o: { askRecordsAfterMs?: number } = { askRecordsAfterMs: 300 }): Promise<App> {
  const conv = new Conversations({
    messenger: d.m,
    store,
    warnAfterMs: 0,
    ...(o.askRecordsAfterMs !== undefined ? { askRecordsAfterMs: o.askRecordsAfterMs } : {}),
  });
  const envs: Envelope[] = [];
  let ready = 0;
  const stream = d.m.events({
    onMsg: async (env) => {
      envs.push(env);
      await conv.receive(env);
    },
    onReady: () => void ready++,
    backoffMs: { initial: 50, max: 200 },
  });
  stream.start();
  await until(() => ready > 0, 'ready');
  await conv.load();
  return {
    d,
    nick: d.m.nick,
    conv,
    store,
    envs,
    async close() {
      conv.stop();
      await stream.close();
    },
  };
}

export const status = (a: App, roomId: string) => a.conv.membership.status(roomId);
export const recorded = (a: App, roomId: string, owner: string, members: string[]) => () => {
  const s = status(a, roomId);
  return s.recorded && s.owner === owner && s.members.join() === members.join();
};
export const membersCalls = (d: Device, roomId: string): string[] => d.requests.filter((r) => r === `POST /api/rooms/${roomId}/members`);

/** A room made by `owner`'s app with `others` in it, once every one of them holds the announced membership. */
export async function roomOf(owner: App, others: App[], name = 'Club'): Promise<string> {
  const room = await owner.d.m.createRoom(
    name,
    others.map((o) => o.nick),
  );
  const all = [owner.nick, ...others.map((o) => o.nick)];
  for (const a of [owner, ...others]) await until(recorded(a, room.id, owner.nick, all), `${a.nick}'s record of the room`);
  return room.id;
}
