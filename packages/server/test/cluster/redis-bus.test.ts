/**
 * The Redis bus on its own, two buses on one channel (two instances): a revocation that could not
 * be published is still carried out on the other instances once the connection is back; each
 * delivery is applied once on each instance; a stream opened after an event was published never
 * gets it late.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisBus } from '../../src/bus/redis.js';
import { LocalStreams, StreamConn, type StreamSink } from '../../src/bus/streams.js';
import { dropRedisPrefix, testRedisUrl } from '@svc/testkit/modes';
import { eventData, type EnvelopeJson } from '@svc/protocol';

function sink(): StreamSink & { ended: boolean } {
  return {
    ended: false,
    send: () => true,
    ping() {},
    buffered: 0,
    drained: async () => {},
    end() {
      this.ended = true;
    },
  };
}

async function bus(local: LocalStreams, prefix: string): Promise<RedisBus> {
  const pub = new Redis(testRedisUrl);
  const sub = new Redis(testRedisUrl);
  return RedisBus.start(local, { pub, sub, prefix, onError: () => {} });
}

/** Waits until `done()` holds, or 3 s have passed (the assertions after it then say what is missing). */
async function eventually(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 3000;
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

/** Two instances' buses on one fresh Redis prefix, each with its own local streams; all closed and dropped afterwards. */
async function withTwoBuses(fn: (a: RedisBus, b: RedisBus) => Promise<void>): Promise<void> {
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const localA = new LocalStreams(60_000);
  const localB = new LocalStreams(60_000);
  const a = await bus(localA, prefix);
  const b = await bus(localB, prefix);
  try {
    await fn(a, b);
  } finally {
    await a.close();
    await b.close();
    localA.closeAll();
    localB.closeAll();
    await dropRedisPrefix(prefix);
  }
}

test('a stream closing that could not be published is sent once Redis answers again, and the request still fails meanwhile', async () => {
  await withTwoBuses(async (a, b) => {
    const s = sink();
    const conn = new StreamConn('device-on-b-1', 'alice', 'session-1', s);
    await b.attach(conn);
    // Instance A loses Redis for its publish: the logout there fails, and B's stream stays open.
    const pub = (a as unknown as { o: { pub: Redis } }).o.pub;
    const realPublish = pub.publish.bind(pub);
    (pub as unknown as { publish: () => Promise<never> }).publish = () => Promise.reject(new Error('connection lost'));
    await assert.rejects(a.closeStreams({ sessions: ['session-1'] }), /connection lost/);
    assert.equal(s.ended, false);
    // The connection is back: the pending closing goes out and B closes the stream.
    (pub as unknown as { publish: typeof realPublish }).publish = realPublish;
    pub.emit('ready');
    await eventually(() => s.ended);
    assert.equal(s.ended, true, 'the stream on the other instance was closed');
  });
});

test("each instance applies a delivery once: its own at once (the echo from Redis dropped), another's when it arrives, whatever the event's data holds", async () => {
  await withTwoBuses(async (a, b) => {
    const got = new Map<string, string[]>();
    const recording = (device: string): StreamSink => ({
      ...sink(),
      send: (ev) => {
        got.set(device, [...(got.get(device) ?? []), ev.data]);
        return true;
      },
    });
    for (const [instance, device] of [
      [a, 'device-on-a'],
      [b, 'device-on-b'],
    ] as const) {
      const conn = new StreamConn(device, 'alice', 'session-1', recording(device));
      await instance.attach(conn);
      conn.finishReplay(new Set(), { event: 'ready', data: eventData('ready', {}) });
    }
    got.clear(); // the ready events
    // Data that spells out each instance's own marker, as a message's text could.
    const fromA = JSON.stringify({ text: `"from":"${a.instanceId}"` }) as EnvelopeJson;
    const fromB = JSON.stringify({ text: `"from":"${b.instanceId}"` }) as EnvelopeJson;
    await a.deliver([{ devices: ['device-on-a', 'device-on-b'], event: 'msg', data: fromB, id: '01J0000000000000000000000A' }]);
    await b.deliver([{ devices: ['device-on-a', 'device-on-b'], event: 'msg', data: fromA, id: '01J0000000000000000000000B' }]);
    await eventually(() => (got.get('device-on-a')?.length ?? 0) + (got.get('device-on-b')?.length ?? 0) >= 4);
    await new Promise((r) => setTimeout(r, 200)); // room for a second copy to arrive
    assert.deepEqual(got.get('device-on-a')?.sort(), [fromA, fromB].sort());
    assert.deepEqual(got.get('device-on-b')?.sort(), [fromA, fromB].sort());
  });
});

test('the deliveries of one round go out as one publish, in the order asked, and a closing asked after them arrives after them', async () => {
  await withTwoBuses(async (a, b) => {
    const got: string[] = [];
    const s = { ...sink(), send: (ev: { data: string }) => (got.push(ev.data), true) };
    const conn = new StreamConn('device-on-b', 'alice', 'session-1', s);
    await b.attach(conn);
    conn.finishReplay(new Set(), { event: 'ready', data: eventData('ready', {}) });
    got.length = 0;
    const pub = (a as unknown as { o: { pub: Redis } }).o.pub;
    const published: string[] = [];
    const realPublish = pub.publish.bind(pub);
    (pub as unknown as { publish: (c: string, m: string) => Promise<number> }).publish = (c, m) => {
      published.push(m);
      return realPublish(c, m);
    };
    const data = (i: number) => JSON.stringify({ n: i }) as EnvelopeJson;
    const sends = [1, 2, 3].map((i) => a.deliver([{ devices: ['device-on-b'], event: 'msg', data: data(i), id: `01J000000000000000000000${i}A` }]));
    // Asked in the same round, after the deliveries: it must not overtake them.
    const closing = a.closeStreams({ devices: ['device-on-b'] });
    await Promise.all([...sends, closing]);
    assert.equal(published.length, 2, 'one publish for the three deliveries, one for the closing');
    assert.equal((JSON.parse(published[0]!) as { d: unknown[] }).d.length, 3);
    await eventually(() => s.ended);
    assert.equal(s.ended, true, 'the closing arrived');
    assert.deepEqual(got, [data(1), data(2), data(3)], 'each delivery once, in order, before the closing');
  });
});

test('a round whose publish fails still answers its callers, logs once, and has the devices it missed closed once Redis is back', async () => {
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const errors: string[] = [];
  const local = new LocalStreams(60_000);
  const pub = new Redis(testRedisUrl);
  const sub = new Redis(testRedisUrl);
  const a = await RedisBus.start(local, { pub, sub, prefix, onError: (_e, what) => errors.push(what) });
  const localB = new LocalStreams(60_000);
  const b = await bus(localB, prefix);
  try {
    const s = sink();
    await b.attach(new StreamConn('device-on-b', 'alice', 'session-1', s));
    const realPublish = pub.publish.bind(pub);
    (pub as unknown as { publish: () => Promise<never> }).publish = () => Promise.reject(new Error('connection lost'));
    const data = JSON.stringify({ n: 1 }) as EnvelopeJson;
    await Promise.all([
      a.deliver([{ devices: ['device-on-b'], event: 'msg', data, id: '01J0000000000000000000001A' }]),
      a.deliver([{ devices: ['device-on-b'], event: 'msg', data, id: '01J0000000000000000000002A' }]),
    ]);
    assert.deepEqual(errors, ['bus publish failed'], 'one publish for the round, so one failure');
    assert.equal(s.ended, false);
    (pub as unknown as { publish: typeof realPublish }).publish = realPublish;
    pub.emit('ready');
    await eventually(() => s.ended);
    assert.equal(s.ended, true, 'the stream that missed the event was closed, so its client replays the queue');
  } finally {
    await a.close();
    await b.close();
    local.closeAll();
    localB.closeAll();
    await dropRedisPrefix(prefix);
  }
});

test('a stream opened after an event was published does not get it, however late the event reaches its instance; a later event it gets', async () => {
  await withTwoBuses(async (a, b) => {
    const got: string[] = [];
    const s = { ...sink(), send: (ev: { event: string; data: string }) => (got.push(`${ev.event} ${ev.data}`), true) };
    const left = (id: string) => ({ devices: ['device-on-b'], event: 'room_left' as const, data: eventData('room_left', { id }) });
    // B's subscription is held back, as a busy instance or network would: the first event is
    // published (A's request has answered) but has not reached B when B's stream opens.
    const subB = (b as unknown as { o: { sub: Redis } }).o.sub;
    subB.stream.pause();
    await a.deliver([left('aaaaaaaaaaaaaaaaaaaaaa')]);
    const conn = new StreamConn('device-on-b', 'alice', 'session-1', s);
    const attached = b.attach(conn);
    await new Promise((r) => setTimeout(r, 100));
    subB.stream.resume();
    await attached;
    conn.finishReplay(new Set(), { event: 'ready', data: eventData('ready', {}) });
    await a.deliver([left('bbbbbbbbbbbbbbbbbbbbbb')]);
    await eventually(() => got.length >= 2);
    await new Promise((r) => setTimeout(r, 100)); // room for the earlier event, were it to come
    assert.deepEqual(got, ['ready {}', `room_left ${eventData('room_left', { id: 'bbbbbbbbbbbbbbbbbbbbbb' })}`]);
  });
});

/** One instance's bus on a fresh Redis prefix, with its subscriber connection to hold back or cut. */
async function withOneBus(fn: (b: RedisBus, local: LocalStreams, sub: Redis) => Promise<void>): Promise<void> {
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const local = new LocalStreams(60_000);
  const b = await bus(local, prefix);
  const sub = (b as unknown as { o: { sub: Redis } }).o.sub;
  try {
    await fn(b, local, sub);
  } finally {
    sub.stream.resume();
    await b.close();
    local.closeAll();
    await dropRedisPrefix(prefix);
  }
}

test('a stream is refused, and left unregistered, when the subscription does not answer its fence', async () => {
  await withOneBus(async (b, local, sub) => {
    sub.stream.pause(); // a hung Redis, as this instance sees it
    await assert.rejects(b.attach(new StreamConn('device-on-b', 'alice', 'session-1', sink())), /did not answer/);
    assert.equal(local.has('device-on-b'), false);
  });
});

test('a stream whose fence outlives the subscription it was sent on is refused, and left unregistered', async () => {
  await withOneBus(async (b, local, sub) => {
    sub.stream.pause();
    const attached = b.attach(new StreamConn('device-on-b', 'alice', 'session-1', sink()));
    sub.stream.destroy(); // the connection drops with the PING unanswered; ioredis reconnects
    await assert.rejects(attached, /subscription is down|did not answer/);
    assert.equal(local.has('device-on-b'), false);
  });
});
