/**
 * The window between Redis' return and the moment an instance's subscription is back. A stream
 * that opens in it replays its queue from the store and then counts on the bus for everything
 * sent later; an event published before the subscription reaches Redis would go to nobody, and
 * the envelope would wait in the queue, unannounced, until the stream happened to reconnect.
 *
 * Two buses on a private `redis-server`: the receiving one subscribes through a proxy that holds
 * its SUBSCRIBE for a while after the restart (a slow network or a busy server), the sending one
 * connects directly. The receiving stream must get what is published after it attached.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyBaseLogger } from 'fastify';
import { eventData, type EnvelopeJson } from '@svc/protocol';
import { redisClient } from '../../src/redis-client.js';
import { RedisBus } from '../../src/bus/redis.js';
import { LocalStreams, StreamConn, type StreamSink } from '../../src/bus/streams.js';
import { frameOf } from '../../src/http/sse.js';
import { ulid } from '@svc/testkit/harness';
import { RedisChild, SUBSCRIBE } from './redis-child.js';
import { TcpProxy } from './tcp-proxy.js';

const quiet = { warn: () => {} } as unknown as FastifyBaseLogger;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function recordingSink(): StreamSink & { frames: string[]; ended: boolean } {
  return {
    frames: [],
    ended: false,
    send(ev) {
      this.frames.push(frameOf(ev));
      return true;
    },
    ping() {},
    buffered: 0,
    drained: async () => {},
    end() {
      this.ended = true;
    },
  };
}

async function startBus(local: LocalStreams, pubUrl: string, subUrl: string): Promise<RedisBus> {
  const pub = redisClient(pubUrl, quiet, 'bus', false);
  const sub = redisClient(subUrl, quiet, 'subscriber', true);
  await Promise.all([pub.connect(), sub.connect()]);
  return RedisBus.start(local, { pub, sub, prefix: 'resub:', onError: () => {} });
}

const connOf = (bus: RedisBus, role: 'pub' | 'sub') => (bus as unknown as { o: Record<'pub' | 'sub', { status: string }> }).o[role];

async function until(what: string, ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    assert.ok(Date.now() < deadline, what);
    await sleep(10);
  }
}

test('a stream that opens while its instance resubscribes after Redis returns gets every event published after it opened', async () => {
  const redis = new RedisChild();
  await redis.start();
  const proxy = new TcpProxy('127.0.0.1', redis.port);
  await proxy.start();
  const localA = new LocalStreams(60_000);
  const localB = new LocalStreams(60_000);
  const receiving = await startBus(localA, redis.url, `redis://127.0.0.1:${proxy.port}`);
  const sending = await startBus(localB, redis.url, redis.url);
  try {
    await redis.stop();
    await until('the receiving instance noticed the outage', () => connOf(receiving, 'sub').status !== 'ready');
    proxy.hold((chunk) => SUBSCRIBE.test(chunk.toString('latin1')), 3000);
    await redis.start();

    // The client opens its stream again as soon as the instance accepts it, and the replay is
    // done at once (its queue is empty), as openStream does it.
    const sink = recordingSink();
    const conn = new StreamConn('device-resub-1', 'bob', 'session-1', sink);
    const opened = Date.now();
    for (;;) {
      try {
        await receiving.attach(conn);
        break;
      } catch {
        assert.ok(Date.now() - opened < 10_000, 'the stream could open again');
        await sleep(10);
      }
    }
    conn.finishReplay(new Set(), { event: 'ready', data: eventData('ready', {}) });

    // An envelope committed after the replay is announced by the other instance.
    await until('the sending instance is connected again', () => connOf(sending, 'pub').status === 'ready');
    const id = ulid();
    await sending.deliver([{ devices: [conn.deviceId], event: 'msg', data: JSON.stringify({ id }) as EnvelopeJson, id }]);
    await until(
      'the event reached the open stream (or the stream ended, so that its replay brings it)',
      () => sink.ended || sink.frames.some((f) => f.includes(id)),
      6000,
    );
  } finally {
    await receiving.close();
    await sending.close();
    localA.closeAll();
    localB.closeAll();
    await proxy.close();
    await redis.stop();
  }
});
