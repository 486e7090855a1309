/** A stream's events around its replay: held while it runs, and no envelope twice after it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { EnvelopeJson } from '@svc/protocol';
import { StreamConn, type StreamSink } from '../../src/bus/streams.js';
import type { StreamEvent } from '../../src/bus/types.js';
import { PING_FRAME, frameOf, sseFrame } from '../../src/http/sse.js';

function sink(): StreamSink & { frames: string[] } {
  const frames: string[] = [];
  return {
    frames,
    send: (ev) => (frames.push(frameOf(ev)), true),
    ping: () => frames.push(PING_FRAME),
    buffered: 0,
    drained: async () => {},
    end() {},
  };
}

const msg = (id: string) => ({ event: 'msg', data: '{}' as EnvelopeJson, id }) satisfies StreamEvent;
const READY = { event: 'ready', data: '{}' } as StreamEvent;

test('an envelope sent by the replay is not sent again live when its send finishes after the replay', async () => {
  const out = sink();
  const conn = new StreamConn('device-1', 'alice', 'session-1', out);
  const m1 = msg('01J00000000000000000000001');
  await conn.writeReplay(m1);
  conn.finishReplay(new Set(['01J00000000000000000000001']), READY);
  // The send whose envelope the replay read is answered now, and delivers it live.
  conn.push(m1);
  const m2 = msg('01J00000000000000000000002');
  conn.push(m2);
  assert.deepEqual(out.frames, [sseFrame('msg', '{}', m1.id), sseFrame('ready', '{}'), sseFrame('msg', '{}', m2.id)]);
  // After the next ping the remembered ids are gone (an id is never queued twice anyway).
  conn.ping();
  conn.push(m1);
  assert.equal(out.frames.at(-2), PING_FRAME);
  assert.equal(out.frames.at(-1), sseFrame('msg', '{}', m1.id));
});

test('live events wait while the replay runs and go out after it, before ready, without those it replayed', async () => {
  const out = sink();
  const conn = new StreamConn('device-1', 'alice', 'session-1', out);
  const replayed = msg('01J00000000000000000000001');
  const live = msg('01J00000000000000000000002');
  conn.push(replayed);
  conn.push(live);
  assert.deepEqual(out.frames, [], 'nothing goes out before the replay');
  await conn.writeReplay(replayed);
  conn.finishReplay(new Set([replayed.id]), READY);
  assert.deepEqual(out.frames, [sseFrame('msg', '{}', replayed.id), sseFrame('msg', '{}', live.id), sseFrame('ready', '{}')]);
});

test('SSE frames: the wire form of docs/API.md, made once per event object, and no line break in a field', () => {
  const ev = msg('01J00000000000000000000003');
  assert.equal(frameOf(ev), 'event: msg\nid: 01J00000000000000000000003\ndata: {}\n\n');
  assert.equal(frameOf(READY), 'event: ready\ndata: {}\n\n');
  assert.equal(PING_FRAME, ': ping\n\n');
  assert.deepEqual(Object.keys(ev), ['event', 'data', 'id'], 'the kept frame is no field of the event (the Redis bus publishes the event as JSON)');
  assert.equal(JSON.stringify(ev), '{"event":"msg","data":"{}","id":"01J00000000000000000000003"}');
  // Kept, not made again for the next stream the same delivery reaches.
  const delivery = { ...msg('01J00000000000000000000004'), devices: ['device-1', 'device-2'] };
  const first = frameOf(delivery);
  delivery.data = '{"changed":true}' as EnvelopeJson;
  assert.equal(frameOf(delivery), first);
  assert.throws(() => sseFrame('msg', '{}', '01J\nevent: room'), /line break/);
});
