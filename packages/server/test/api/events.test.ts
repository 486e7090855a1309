/**
 * GET /api/events (docs/API.md; the reset of a pending push): refused
 * connections, stream headers, replay then `ready`, live `msg`, sends racing the replay, a second
 * stream for one device, and the push-pending reset on connect.
 * Closing streams: events-close.test.ts. Room events and X-Device: events-scope.test.ts.
 * Keep-alive ping: events-ping.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createECDH, randomBytes } from 'node:crypto';
import { encodeB64url } from '@svc/protocol';
import { Client, Stream, dmBody, startServer, ulid, userWithDevices, type TestServer } from '@svc/testkit/harness';
import { assertError, gotMsg, replay, send } from './messaging-helpers.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const CSP = "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

describe('refused connections are JSON errors without a stream', () => {
  function assertJsonRefusal(r: Awaited<ReturnType<Client['get']>>): void {
    assert.equal(r.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(r.headers.get('cache-control'), 'no-store');
    assert.ok(r.json && typeof r.json.error === 'string', r.text);
  }

  test('events: without a session answers 401 unauthenticated (before the device check)', async () => {
    const { devices } = await userWithDevices(server, 1);
    const anon = new Client(server);
    for (const path of [`/api/events?device=${devices[0]}`, '/api/events', '/api/events?device=x']) {
      const r = await anon.get(path);
      assertError(r, 401, 'unauthenticated');
      assertJsonRefusal(r);
    }
  });

  test('events: device missing or malformed answers 400 invalid field device', async () => {
    const { c } = await userWithDevices(server, 1);
    for (const path of [
      '/api/events',
      '/api/events?device=',
      '/api/events?device=short',
      `/api/events?device=${'x'.repeat(65)}`,
      '/api/events?device=bad%20device!',
      '/api/events?dev=abcdefgh1',
    ]) {
      const r = await c.get(path);
      assertError(r, 400, 'invalid', 'device');
      assertJsonRefusal(r);
    }
  });

  test('events: a device of another account or an unknown device answers 403 unknown_device', async () => {
    const a = await userWithDevices(server, 1);
    const b = await userWithDevices(server, 1);
    for (const dev of [b.devices[0]!, 'never-registered-123']) {
      const r = await a.c.get(`/api/events?device=${dev}`);
      assertError(r, 403, 'unknown_device');
      assertJsonRefusal(r);
    }
    // the refused attempt did not attach anything: the owner's stream still gets the replay and live events
    assert.equal(server.hasStream(b.devices[0]!), false);
    const s = await Stream.open(b.c, b.devices[0]!);
    assert.ok(await s.ready());
    s.close();
  });
});

test('events: stream headers are exactly Content-Type text/event-stream; charset=utf-8, Cache-Control no-store, X-Accel-Buffering no, plus CSP, Referrer-Policy and nosniff', async () => {
  const { c, devices } = await userWithDevices(server, 1);
  const s = await Stream.open(c, devices[0]!);
  assert.equal(s.status, 200);
  const h = s.headers!;
  assert.equal(h.get('content-type'), 'text/event-stream; charset=utf-8');
  assert.equal(h.get('cache-control'), 'no-store');
  assert.equal(h.get('x-accel-buffering'), 'no');
  assert.equal(h.get('content-security-policy'), CSP);
  assert.equal(h.get('referrer-policy'), 'no-referrer');
  assert.equal(h.get('x-content-type-options'), 'nosniff');
  assert.ok(await s.ready());
  s.close();
});

test('replay: an empty queue gives only `ready`, whose data is {}', async () => {
  const { c, devices } = await userWithDevices(server, 1);
  const q = await replay(c, devices[0]!);
  assert.deepEqual(q.names, ['ready']);
  assert.equal(q.events[0]!.data, '{}');
  assert.equal(q.events[0]!.id, undefined);
});

test('replay: queued envelopes come as `msg` events in queue order, each with id: = envelope id and the envelope as data, then `ready` {}', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const sent: { id: string; ts: number; body: ReturnType<typeof dmBody> }[] = [];
  for (let i = 0; i < 4; i++) {
    const body = dmBody(b.c.nick);
    const r = await send(a.c, body, a.devices[0]);
    assert.equal(r.status, 202);
    sent.push({ id: r.json.id, ts: r.json.ts, body });
  }
  const q = await replay(b.c, b.devices[0]!);
  assert.deepEqual(q.names, ['msg', 'msg', 'msg', 'msg', 'ready']);
  q.events.slice(0, 4).forEach((e, i) => {
    const s = sent[i]!;
    assert.equal(e.id, s.id);
    assert.equal(e.data, JSON.stringify({ id: s.id, to: { dm: b.c.nick }, from: a.c.nick, keyId: 'dm', iv: s.body.iv, ct: s.body.ct, ts: s.ts }));
  });
  assert.equal(q.events[4]!.data, '{}');
});

test('live: after `ready`, a new envelope arrives at once as a `msg` event with id: = envelope id', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const s = await Stream.open(b.c, b.devices[0]!);
  assert.ok(await s.ready());
  const body = dmBody(b.c.nick);
  const r = await send(a.c, body, a.devices[0]);
  assert.equal(r.status, 202);
  assert.ok(await gotMsg(s, body.id));
  assert.deepEqual(
    s.events.map((e) => e.event),
    ['ready', 'msg'],
  );
  const m = s.events[1]!;
  assert.equal(m.id, body.id);
  assert.equal(m.data, JSON.stringify({ id: body.id, to: { dm: b.c.nick }, from: a.c.nick, keyId: 'dm', iv: body.iv, ct: body.ct, ts: r.json.ts }));
  s.close();
});

describe('a message sent during the replay is neither lost nor duplicated', () => {
  /**
   * The replay reads the queue through the store's readQueue; wrapping it lets a send land at an
   * exact point of the replay: before the read (the envelope is both in the queue read and live)
   * or after it (the envelope is only live).
   */
  async function sendDuringReplay(when: 'before-read' | 'after-read'): Promise<void> {
    const a = await userWithDevices(server, 1);
    const b = await userWithDevices(server, 1);
    const b1 = b.devices[0]!;
    const queuedIds: string[] = [];
    for (let i = 0; i < 3; i++) queuedIds.push((await send(a.c, dmBody(b.c.nick), a.devices[0])).json.id);
    const store = server.app.deps.store;
    const original = store.readQueue;
    let raced = null as string | null;
    const raceSend = async () => {
      const r = await send(a.c, dmBody(b.c.nick), a.devices[0]);
      assert.equal(r.status, 202, r.text);
      raced = r.json.id;
    };
    store.readQueue = async (deviceId, afterSeq, limit) => {
      if (deviceId !== b1 || raced !== null) return original.call(store, deviceId, afterSeq, limit);
      if (when === 'before-read') await raceSend();
      const page = await original.call(store, deviceId, afterSeq, limit);
      if (when === 'after-read') await raceSend();
      return page;
    };
    let s: Stream;
    try {
      s = await Stream.open(b.c, b1);
      assert.ok(await s.ready());
    } finally {
      store.readQueue = original;
    }
    await Stream.settle();
    assert.ok(raced !== null);
    const ids = s.named('msg').map((e) => e.json.id as string);
    assert.deepEqual(ids.slice(0, 3), queuedIds, 'the queue is replayed in order');
    assert.deepEqual([...ids].sort(), [...queuedIds, raced].sort(), 'every envelope exactly once');
    for (const e of s.named('msg')) assert.equal(e.id, e.json.id);
    // and the raced envelope is queued like the others
    s.close();
    assert.deepEqual((await replay(b.c, b1)).msgIds, [...queuedIds, raced]);
  }

  test('replay race: an envelope queued after the stream attached but before the queue read comes once', async () => {
    await sendDuringReplay('before-read');
  });

  test('replay race: an envelope queued after the queue read comes once', async () => {
    await sendDuringReplay('after-read');
  });

  test('replay race: sends concurrent with a long replay (more than one page) are each delivered once', async () => {
    const a = await userWithDevices(server, 1);
    const b = await userWithDevices(server, 1);
    const b1 = b.devices[0]!;
    const store = server.app.deps.store;
    const seeded: string[] = [];
    const now = Date.now();
    for (let i = 0; i < 1200; i++) {
      const id = ulid(now);
      seeded.push(id);
      await store.sendMessage({
        id,
        from: a.c.nick,
        to: { dm: b.c.nick },
        keyId: 'dm',
        iv: 'AAAAAAAAAAAAAAAA',
        ct: 'AAAAAAAAAAAAAAAAAAAAAA',
        senderDevice: a.devices[0]!,
        now,
      });
    }
    const s = await Stream.open(b.c, b1);
    const live = await Promise.all(Array.from({ length: 8 }, () => send(a.c, dmBody(b.c.nick), a.devices[0])));
    const liveIds = live.map((r) => r.json.id as string);
    assert.ok(await s.ready(10_000));
    assert.ok(await s.until((ev) => liveIds.every((id) => ev.some((e) => e.event === 'msg' && e.json.id === id))));
    await Stream.settle();
    const ids = s.named('msg').map((e) => e.json.id as string);
    assert.deepEqual(ids.slice(0, 1200), seeded, 'the queue is replayed in order');
    assert.equal(ids.length, 1208);
    assert.equal(new Set(ids).size, 1208);
    assert.equal(s.named('ready').length, 1);
    s.close();
  });
});

test('second stream: a new stream for the same device closes the older one, and the newer one gets the replay and live events', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const b1 = b.devices[0]!;
  const s1 = await Stream.open(b.c, b1);
  assert.ok(await s1.ready());
  const m1 = (await send(a.c, dmBody(b.c.nick), a.devices[0])).json.id as string;
  assert.ok(await gotMsg(s1, m1));

  const s2 = await Stream.open(b.c, b1);
  assert.ok(await s1.closedByServer(), 'the older stream is closed');
  assert.ok(await s2.ready());
  assert.deepEqual(
    s2.events.map((e) => e.event),
    ['msg', 'ready'],
  );
  assert.equal(s2.events[0]!.json.id, m1);

  const before = s1.events.length;
  const m2 = (await send(a.c, dmBody(b.c.nick), a.devices[0])).json.id as string;
  assert.ok(await gotMsg(s2, m2));
  await Stream.settle();
  assert.equal(s1.events.length, before, 'nothing more reaches the closed stream');
  assert.equal(s2.ended, false);
  s2.close();
});

test('push-pending: opening a stream resets it (claimPush returns the device again only after a reset)', async () => {
  const { c, devices } = await userWithDevices(server, 1);
  const d = devices[0]!;
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const sub = { endpoint: 'https://push.example.test/x', keys: { p256dh: encodeB64url(ecdh.getPublicKey()), auth: encodeB64url(randomBytes(16)) } };
  const put = await c.put(`/api/devices/${d}/push`, { subscription: sub }, { device: d });
  assert.equal(put.status, 204, put.text);
  const store = server.app.deps.store;

  assert.deepEqual(
    (await store.claimPush([d])).map((t) => t.deviceId),
    [d],
  );
  assert.deepEqual(await store.claimPush([d]), [], 'pending: no second push');
  assert.deepEqual(await store.claimPush([d]), []);

  const s = await Stream.open(c, d);
  assert.ok(await s.ready());
  s.close();
  assert.deepEqual(
    (await store.claimPush([d])).map((t) => t.deviceId),
    [d],
    'reset by opening the stream',
  );
  assert.deepEqual(await store.claimPush([d]), []);
});
