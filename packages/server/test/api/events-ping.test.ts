/**
 * The keep-alive ping (docs/API.md): an SSE comment
 * line `: ping` and a blank line, every 20 seconds, on every open stream.
 *
 * No test waits 20 s: node:test's mock timers replace setInterval (only setInterval; timeouts,
 * sockets and the test's own waits stay real) before the server starts, so the stream registry's
 * ping timer is a mocked one, and the test moves that clock by hand with mock.timers.tick().
 */
import { after, before, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { Stream, dmBody, startServer, userWithDevices, type TestServer } from '@svc/testkit/harness';
import { send } from './messaging-helpers.js';

let server: TestServer;
before(async () => {
  mock.timers.enable({ apis: ['setInterval'] });
  server = await startServer();
});
after(async () => {
  await server.close();
  mock.timers.reset();
});

test('ping: every open stream gets the comment `: ping` every 20 s, and not before', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 2);
  const sA = await Stream.open(a.c, a.devices[0]!);
  const sB = await Stream.open(b.c, b.devices[0]!);
  const sB2 = await Stream.open(b.c, b.devices[1]!);
  const all = [sA, sB, sB2];
  for (const s of all) assert.ok(await s.ready());

  mock.timers.tick(19_999);
  await Stream.settle();
  for (const s of all) assert.deepEqual(s.comments, [], 'no ping before 20 s');

  mock.timers.tick(1);
  for (const s of all) assert.ok(await s.until(() => s.comments.length === 1), 'a ping at 20 s');
  for (const s of all) assert.deepEqual(s.comments, [': ping']);

  mock.timers.tick(20_000);
  for (const s of all) assert.ok(await s.until(() => s.comments.length === 2), 'a second ping at 40 s');
  for (const s of all) assert.deepEqual(s.comments, [': ping', ': ping']);
  // a ping is a comment, not an event: the events are still only `ready`
  for (const s of all)
    assert.deepEqual(
      s.events.map((e) => e.event),
      ['ready'],
    );
  for (const s of all) s.close();
});

test('ping: the wire form is exactly ": ping" followed by a blank line, between whole events', async () => {
  const a = await userWithDevices(server, 1);
  const b = await userWithDevices(server, 1);
  const ctrl = new AbortController();
  const r = await fetch(`${server.url}/api/events?device=${b.devices[0]}`, { headers: { cookie: b.c.cookie! }, signal: ctrl.signal });
  assert.equal(r.status, 200);
  const reader = r.body!.getReader();
  const dec = new TextDecoder();
  let text = '';
  const readUntil = async (pred: () => boolean) => {
    while (!pred()) {
      const { value, done } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
    }
  };
  await readUntil(() => text.includes('event: ready\n'));
  await readUntil(() => text.endsWith('\n\n'));
  assert.equal(text, 'event: ready\ndata: {}\n\n');
  mock.timers.tick(20_000);
  await readUntil(() => text.length > 'event: ready\ndata: {}\n\n'.length && text.endsWith('\n\n'));
  assert.equal(text, 'event: ready\ndata: {}\n\n: ping\n\n');
  const body = dmBody(b.c.nick);
  assert.equal((await send(a.c, body, a.devices[0])).status, 202);
  await readUntil(() => text.includes(body.id) && text.endsWith('\n\n'));
  assert.ok((text as string).startsWith('event: ready\ndata: {}\n\n: ping\n\nevent: msg\nid: ' + body.id + '\ndata: {'), JSON.stringify(text));
  ctrl.abort();
});
