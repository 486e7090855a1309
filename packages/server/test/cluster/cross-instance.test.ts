/**
 * Two instances on one PostgreSQL schema and one Redis (REDIS_URL, docs/DEPLOY.md "Several instances"): every
 * rule holds whichever instance a request or a stream lands on. Each test talks to a chosen
 * instance directly, so the crossing is certain rather than left to a balancer.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  Client,
  Stream,
  via,
  assertError,
  dmBody,
  instance,
  signup,
  startServer,
  userWithDevices,
  wk,
  id16,
  type TestServer,
} from '@svc/testkit/harness';
import { PushService, type Subscription } from '@svc/testkit/push';
import type { RedisBus } from '../../src/bus/redis.js';
import { Redis } from 'ioredis';
import { testRedisUrl } from '@svc/testkit/modes';

describe('two instances: events cross between them', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({}, {}, 'postgres-2');
  });
  after(() => server.close());

  test('a device streaming from instance 1 gets a message posted to instance 2', async () => {
    const a = await userWithDevices(instance(server, 0), 1);
    const b = await userWithDevices(instance(server, 0), 1);
    const s = await Stream.open(b.c, b.devices[0]!);
    assert.ok(await s.ready());
    const body = dmBody(b.c.nick);
    const r = await via(server, a.c, 1).post('/api/messages', body, { device: a.devices[0]! });
    assert.equal(r.status, 202, r.text);
    assert.ok(await s.until((ev) => ev.some((e) => e.event === 'msg' && e.id === body.id)), 'msg arrived on instance 1');
    assert.equal(s.named('msg').length, 1, 'delivered once, not once per instance');
    s.close();
  });

  test('room events from instance 2 reach streams on instance 1: room on create and members change, room_left on removal', async () => {
    const owner = await userWithDevices(instance(server, 0), 2);
    const member = await userWithDevices(instance(server, 0), 1);
    const ownerOther = await Stream.open(owner.c, owner.devices[1]!);
    const memberStream = await Stream.open(member.c, member.devices[0]!);
    assert.ok((await ownerOther.ready()) && (await memberStream.ready()));
    const o2 = via(server, owner.c, 1);
    const id = id16();
    const created = await o2.post('/api/rooms', { id, name: 'cross', keyId: id16(), keys: [wk(owner.c.nick)] }, { device: owner.devices[0]! });
    assert.equal(created.status, 201, created.text);
    assert.ok(await ownerOther.until((ev) => ev.some((e) => e.event === 'room' && e.json.id === id)), "owner's other device got room");
    const added = await o2.post(`/api/rooms/${id}/members`, {
      add: [member.c.nick],
      remove: [],
      keyId: id16(),
      keys: [wk(owner.c.nick), wk(member.c.nick)],
    });
    assert.equal(added.status, 200, added.text);
    assert.ok(await memberStream.until((ev) => ev.some((e) => e.event === 'room' && e.json.id === id && e.json.keys.length === 1)));
    const removed = await o2.post(`/api/rooms/${id}/members`, { add: [], remove: [member.c.nick], keyId: id16(), keys: [wk(owner.c.nick)] });
    assert.equal(removed.status, 200, removed.text);
    assert.ok(await memberStream.until((ev) => ev.some((e) => e.event === 'room_left' && e.json.id === id)), 'room_left crossed');
    ownerOther.close();
    memberStream.close();
  });

  test("logout on instance 2 closes the session's streams on instance 1", async () => {
    const u = await userWithDevices(instance(server, 0), 1);
    const s = await Stream.open(u.c, u.devices[0]!);
    assert.ok(await s.ready());
    assert.equal((await via(server, u.c, 1).post('/api/logout')).status, 204);
    assert.ok(await s.closedByServer(), 'stream on instance 1 closed');
  });

  test("a password change on instance 2 closes the other sessions' streams on instance 1", async () => {
    const u = await userWithDevices(instance(server, 0), 1);
    const login = await new Client(instance(server, 0)).post('/api/login', { nick: u.c.nick, authKey: u.c.authKey });
    assert.equal(login.status, 200);
    const other = new Client(instance(server, 0));
    other.cookie = /svc_session=[^;]*/.exec(login.headers.get('set-cookie') ?? '')![0];
    const s = await Stream.open(other, u.devices[0]!);
    assert.ok(await s.ready());
    const r = await via(server, u.c, 1).post('/api/password', {
      authKey: u.c.authKey,
      newAuthKey: u.c.authKey,
      kdf: { alg: 'argon2id', salt: id16(), m: 65536, t: 3, p: 1 },
      encryptedKey: { iv: 'AAAAAAAAAAAAAAAA', ct: id16() },
    });
    assert.equal(r.status, 204, r.text);
    assert.ok(await s.closedByServer(), 'stream of the other session closed');
  });

  test('a second stream for a device on the other instance closes the first, and the newer one gets the replay', async () => {
    const a = await userWithDevices(instance(server, 0), 1);
    const b = await userWithDevices(instance(server, 0), 1);
    await a.c.post('/api/messages', dmBody(b.c.nick), { device: a.devices[0]! });
    const first = await Stream.open(b.c, b.devices[0]!);
    assert.ok(await first.ready());
    const second = await Stream.open(via(server, b.c, 1), b.devices[0]!);
    assert.ok(await second.ready());
    assert.ok(await first.closedByServer(), 'the older stream on instance 1 closed');
    assert.equal(second.ended, false, 'the newer stream stays open');
    assert.equal(second.named('msg').length, 1, 'the newer stream replayed the queue');
    assert.ok(server.apps[1]!.streams.has(b.devices[0]!));
    assert.equal(server.apps[0]!.streams.has(b.devices[0]!), false);
    second.close();
  });

  test('device lists show a device online whichever instance holds its stream', async () => {
    const u = await userWithDevices(instance(server, 0), 2);
    const s = await Stream.open(via(server, u.c, 1), u.devices[1]!);
    assert.ok(await s.ready());
    const list = (await u.c.get('/api/devices')).json as { id: string; online: boolean }[];
    assert.deepEqual(
      list.map((d) => [d.id, d.online]),
      [
        [u.devices[0], false],
        [u.devices[1], true],
      ],
    );
    s.close();
  });
});

describe('two instances: rate limits are shared', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ LIMIT_MESSAGES_PER_MIN: '3', LIMIT_WRITES_PER_MIN: '3' }, {}, 'postgres-2');
  });
  after(() => server.close());

  test('the message limit counts sends on both instances together, with Retry-After', async () => {
    const a = await userWithDevices(instance(server, 0), 1);
    const b = await signup(instance(server, 0));
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await via(server, a.c, i % 2).post('/api/messages', dmBody(b.nick), { device: a.devices[0]! }));
    assert.deepEqual(
      results.map((r) => r.status),
      [202, 202, 202, 429],
    );
    assertError(results[3]!, 429, 'rate_limited');
    assert.ok(Number(results[3]!.headers.get('retry-after')) >= 1);
  });

  test('the write limit counts writes on both instances together', async () => {
    const u = await signup(instance(server, 0));
    const statuses = [];
    for (let i = 0; i < 4; i++)
      statuses.push((await via(server, u, i % 2).post('/api/devices', { id: `dev-shared-${i}-${id16().slice(0, 6)}` })).status);
    assert.deepEqual(statuses, [201, 201, 201, 429]);
  });
});

test('rate-limit keys in Redis carry neither the nick nor the client IP', async () => {
  const server = await startServer({}, {}, 'postgres');
  const redis = new Redis(testRedisUrl);
  try {
    const u = await signup(server);
    await u.post('/api/devices', { id: `dev-keys-${id16().slice(0, 8)}` });
    const keys = await redis.keys(`${server.app.deps.config.redisPrefix}rl:*`);
    assert.ok(keys.length >= 2, 'the register and write limits left keys');
    for (const k of keys) {
      assert.ok(!k.includes(u.nick), 'no nick in a key');
      assert.ok(!k.includes('127.0.0.1'), 'no IP in a key');
    }
  } finally {
    redis.disconnect();
    await server.close();
  }
});

describe('two instances: presence decides push', () => {
  let server: TestServer;
  let push: PushService;
  before(async () => {
    push = await PushService.start();
    server = await startServer({ PUSH_ALLOW_PRIVATE_TARGETS: '1' }, { presenceTtlS: 2 }, 'postgres-2');
  });
  after(async () => {
    await server.close();
    await push.close();
  });

  async function subscribed(path: string) {
    const sender = await userWithDevices(instance(server, 0), 1);
    const recipient = await userWithDevices(instance(server, 0), 1);
    const sub: Subscription = push.subscription(path);
    const r = await recipient.c.put(
      `/api/devices/${recipient.devices[0]}/push`,
      { subscription: { endpoint: sub.endpoint, keys: sub.keys } },
      { device: recipient.devices[0]! },
    );
    assert.equal(r.status, 204, r.text);
    return { sender, recipient };
  }

  const drained = () => Promise.all(server.apps.map((a) => (a.deps.pusher as { drained?: () => Promise<void> }).drained?.() ?? Promise.resolve()));

  test('no push goes to a device online on the other instance', async () => {
    const { sender, recipient } = await subscribed('/cluster/online');
    const s = await Stream.open(recipient.c, recipient.devices[0]!);
    assert.ok(await s.ready());
    const r = await via(server, sender.c, 1).post('/api/messages', dmBody(recipient.c.nick), { device: sender.devices[0]! });
    assert.equal(r.status, 202);
    assert.ok(await s.until((ev) => ev.some((e) => e.event === 'msg')));
    await drained();
    await Stream.settle(200);
    assert.equal(push.forPath('/cluster/online').length, 0, 'online elsewhere: no push');
    s.close();
  });

  test('presence outlives its TTL while the stream stays open: the instance keeps refreshing it', async () => {
    const u = await userWithDevices(instance(server, 0), 1);
    const s = await Stream.open(u.c, u.devices[0]!);
    assert.ok(await s.ready());
    await Stream.settle(3_000); // longer than the 2 s presence lifetime of this server
    const list = (await via(server, u.c, 1).get('/api/devices')).json as { online: boolean }[];
    assert.equal(list[0]!.online, true, 'still online on the other instance');
    s.close();
  });

  test("a killed instance's devices become offline within the presence lifetime, and get pushes again", async () => {
    const { sender, recipient } = await subscribed('/cluster/killed');
    const s = await Stream.open(recipient.c, recipient.devices[0]!);
    assert.ok(await s.ready());
    const before = (await via(server, recipient.c, 1).get('/api/devices')).json as { online: boolean }[];
    assert.equal(before[0]!.online, true);
    // The crash: instance 1 of the pair stops refreshing and never releases its presence keys.
    (server.apps[0]!.deps.bus as RedisBus).abandon();
    server.apps[0]!.fastify.server.closeAllConnections();
    const deadline = Date.now() + 10_000;
    let online = true;
    while (online && Date.now() < deadline) {
      await Stream.settle(250);
      online = ((await via(server, recipient.c, 1).get('/api/devices')).json as { online: boolean }[])[0]!.online;
    }
    assert.equal(online, false, 'offline once the presence lapsed');
    const r = await via(server, sender.c, 1).post('/api/messages', dmBody(recipient.c.nick), { device: sender.devices[0]! });
    assert.equal(r.status, 202);
    assert.ok(await push.waitFor(() => push.forPath('/cluster/killed').length === 1, 10_000), 'a push went out');
  });
});
