/**
 * svc paces sends under the account's message limit as the web client does, across processes: a
 * send the service refused with 429 waits with the wait shown, a later process remembers the
 * wait instead of asking again, and a send that cannot go in time exits non-zero having sent nothing.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Machine, signedUp, startService, type Service } from './harness.js';

let service: Service;
const machines: Machine[] = [];
before(async () => {
  service = await startService({ LIMIT_MESSAGES_PER_MIN: '2' });
});
after(async () => {
  for (const m of machines) m.remove();
  await service.stop();
});

test('past the limit a send shows its wait, gives up at --timeout with exit 1, and the next process remembers the wait', async () => {
  const ann = await signedUp(service, 'ann');
  const ben = await signedUp(service, 'ben');
  machines.push(ann, ben);
  for (const text of ['one', 'two']) assert.equal((await ann.run(['send', ben.nick, text])).code, 0);
  const third = await ann.run(['send', ben.nick, 'three', '--timeout', '3']);
  assert.equal(third.code, 1);
  assert.match(third.stderr, /^svc: waiting \d+ s for the account's message limit\n/);
  assert.match(third.stderr, /svc: not sent within 3 s \(the service did not accept it\)\n$/);
  const started = Date.now();
  const fourth = await ann.run(['send', ben.nick, 'four', '--timeout', '2']);
  assert.equal(fourth.code, 1);
  assert.match(fourth.stderr, /^svc: waiting (\d+) s for the account's message limit\n/);
  const wait = Number(/waiting (\d+) s/.exec(fourth.stderr)![1]);
  assert.ok(wait > 30 && wait <= 61, `the remembered wait (${wait} s)`);
  assert.ok(Date.now() - started < 10_000);
  const history = await ann.run(['history', ben.nick, '--json']);
  const texts = history.stdout
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { text: string }).text);
  assert.deepEqual(texts, ['one', 'two', 'three', 'four']);
  // Only the two the service accepted arrived.
  const listening = ben.start(['listen', '--json']);
  try {
    await listening.until((r) => r.stderr.includes('listening'), 'listen to be live');
  } finally {
    await listening.stop();
  }
  assert.deepEqual(
    listening.lines.map((l) => (JSON.parse(l) as { text: string }).text),
    ['one', 'two'],
  );
});
