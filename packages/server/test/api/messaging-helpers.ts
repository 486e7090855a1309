/** Small helpers shared by the messages-* and events-* suites (not a test file itself). */
import assert from 'node:assert/strict';
import { assertError, Client, Stream, ct, id16, iv, ulid, type Res, type TestServer } from '@svc/testkit/harness';

/** A second signed-in session of the same account. */
export async function login(server: TestServer, c: Client): Promise<Client> {
  const s = new Client(server);
  const r = await s.post('/api/login', { nick: c.nick, authKey: c.authKey });
  assert.equal(r.status, 200, r.text);
  s.nick = c.nick;
  s.authKey = c.authKey;
  return s;
}

export function send(c: Client, body: unknown, device?: string): Promise<Res> {
  return c.post('/api/messages', body, device === undefined ? {} : { device });
}

export function ack(c: Client, ids: unknown, device?: string): Promise<Res> {
  return c.post('/api/ack', { ids }, device === undefined ? {} : { device });
}

export function roomBody(roomId: string, keyId: string, id = ulid()) {
  return { id, to: { room: roomId }, keyId, iv: iv(), ct: ct() };
}

export interface TestRoom {
  id: string;
  /** Key ids in the order they were made; the last is the newest. */
  keyIds: string[];
}

/** Creates a room owned by `owner` and, when `members` is not empty, adds them with a second key. */
export async function createRoom(owner: Client, members: Client[] = [], opts: { device?: string } = {}): Promise<TestRoom> {
  const id = id16();
  const keyId = id16();
  const r = await owner.post(
    '/api/rooms',
    { id, name: 'room', keyId, keys: [{ to: owner.nick, iv: iv(), ct: ct() }] },
    opts.device ? { device: opts.device } : {},
  );
  assert.equal(r.status, 201, r.text);
  const room: TestRoom = { id, keyIds: [keyId] };
  if (members.length > 0)
    await changeMembers(
      owner,
      room,
      [owner.nick, ...members.map((m) => m.nick)],
      members.map((m) => m.nick),
      [],
      opts,
    );
  return room;
}

/** POST /api/rooms/{id}/members with a fresh key for every nick of `finalMembers`. */
export async function changeMembers(
  owner: Client,
  room: TestRoom,
  finalMembers: string[],
  add: string[],
  remove: string[],
  opts: { device?: string } = {},
): Promise<void> {
  const keyId = id16();
  const r = await owner.post(
    `/api/rooms/${room.id}/members`,
    { add, remove, keyId, keys: finalMembers.map((to) => ({ to, iv: iv(), ct: ct() })) },
    opts.device ? { device: opts.device } : {},
  );
  assert.equal(r.status, 200, r.text);
  room.keyIds.push(keyId);
}

/** Opens the device's stream, waits for `ready`, and returns what came before it; the stream is closed. */
export async function replay(c: Client, device: string): Promise<{ names: string[]; msgIds: string[]; events: Stream['events'] }> {
  const s = await Stream.open(c, device);
  assert.equal(s.status, 200);
  assert.ok(await s.ready(10_000), 'ready expected');
  const upTo = s.events.findIndex((e) => e.event === 'ready');
  const events = s.events.slice(0, upTo + 1);
  s.close();
  return {
    names: events.map((e) => e.event),
    msgIds: events.filter((e) => e.event === 'msg').map((e) => e.json.id as string),
    events,
  };
}

/** A refused or ignored request changed nothing: the device's queue replays nothing, only `ready`. */
export async function assertQueueEmpty(c: Client, device: string): Promise<void> {
  const r = await replay(c, device);
  assert.deepEqual(r.names, ['ready']);
}

/** Waits until the stream holds a `msg` with this envelope id. */
export function gotMsg(s: Stream, id: string, timeoutMs = 3000): Promise<boolean> {
  return s.until((ev) => ev.some((e) => e.event === 'msg' && e.json?.id === id), timeoutMs);
}

export { assertError };
