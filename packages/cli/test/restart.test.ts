/**
 * `svc listen` under a service that restarts: the SDK's event stream reconnects, and every
 * message, also one sent while the listener was still reconnecting, is printed exactly once.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { Machine, signedUp, startService, type Service } from './harness.js';

let service: Service;
const machines: Machine[] = [];
before(async () => {
  service = await startService();
});
after(async () => {
  for (const m of machines) m.remove();
  await service.stop();
});

test('listen reconnects after the service restarts and prints every message once', async () => {
  const ann = await signedUp(service, 'ann');
  const ben = await signedUp(service, 'ben');
  machines.push(ann, ben);
  const listening = ben.start(['listen', '--json']);
  const texts = () => listening.lines.map((l) => (JSON.parse(l) as { text: string }).text);
  try {
    await listening.until((r) => r.stderr.includes('listening'), 'listen to be live');
    assert.equal((await ann.run(['send', ben.nick, 'before the restart'])).code, 0);
    await listening.until(() => texts().length === 1, 'the first message');

    await service.child.stop();
    await listening.until((r) => r.stderr.includes('connection lost'), 'listen to notice');
    const down = await ann.run(['send', ben.nick, 'while it is down']);
    assert.equal(down.code, 3, 'a send while the service is down fails at once');
    await service.child.start();

    // Sent at once: the listener is still waiting out its backoff, so this one is queued for it.
    assert.equal((await ann.run(['send', ben.nick, 'right after the restart'])).code, 0);
    await listening.until(() => texts().length === 2, 'the queued message after reconnecting');
    assert.equal((await ann.run(['send', ben.nick, 'once live again'])).code, 0);
    await listening.until(() => texts().length === 3, 'the live message');
  } finally {
    assert.equal(await listening.stop(), 0, listening.stderr);
  }
  assert.deepEqual(texts(), ['before the restart', 'right after the restart', 'once live again']);
  // Nothing is left for a next listener: everything printed was acknowledged.
  const rest = ben.start(['listen', '--json']);
  try {
    await rest.until((r) => r.stderr.includes('listening'), 'a second listener to be live');
  } finally {
    await rest.stop();
  }
  assert.deepEqual(rest.lines, []);
});
