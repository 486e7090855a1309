/** A stream's frames around its replay: held while it runs, and no envelope twice after it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamConn, sseFrame, type StreamSink } from '../../src/bus/streams.js';

function sink(): StreamSink & { frames: string[] } {
  const frames: string[] = [];
  return { frames, write: (c) => (frames.push(c), true), buffered: 0, drained: async () => {}, end() {} };
}

test('an envelope sent by the replay is not sent again live when its send finishes after the replay', async () => {
  const out = sink();
  const conn = new StreamConn('device-1', 'alice', 'session-1', out);
  const m1 = sseFrame('msg', '{}', '01J00000000000000000000001');
  await conn.writeReplay(m1);
  conn.finishReplay(new Set(['01J00000000000000000000001']), sseFrame('ready', '{}'));
  // The send whose envelope the replay read is answered now, and delivers it live.
  conn.push(m1, '01J00000000000000000000001');
  const m2 = sseFrame('msg', '{}', '01J00000000000000000000002');
  conn.push(m2, '01J00000000000000000000002');
  assert.deepEqual(out.frames, [m1, sseFrame('ready', '{}'), m2]);
  // After the next ping the remembered ids are gone (an id is never queued twice anyway).
  conn.ping();
  conn.push(m1, '01J00000000000000000000001');
  assert.equal(out.frames.at(-1), m1);
});
