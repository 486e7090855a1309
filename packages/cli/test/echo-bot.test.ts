/**
 * The echo bot of docs/BOTS.md (examples/echo-bot.ts, built with the rest) runs as written:
 * signed in as a device of an account svc made, it answers a message sent with svc.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { REPO_ROOT } from '@svc/testkit/child';
import { Machine, Running, signedUp, startService, type Service } from './harness.js';
import { spawn } from 'node:child_process';

let service: Service;
const machines: Machine[] = [];
before(async () => {
  service = await startService();
});
after(async () => {
  for (const m of machines) m.remove();
  await service.stop();
});

test('the echo bot of the docs answers a message with the same text', async () => {
  const bot = await signedUp(service, 'bot');
  const ann = await signedUp(service, 'ann');
  machines.push(bot, ann);
  const running = new Running(
    spawn(process.execPath, [join(REPO_ROOT, 'examples/dist/echo-bot.js')], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        SVC_SERVER: service.url,
        SVC_NICK: bot.nick,
        SVC_PASSWORD: bot.password,
        SVC_DEVICE: 'echo-bot-test',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  try {
    await running.until((r) => r.stdout.includes(`${bot.nick} echoes on ${service.url}`), 'the bot to be live', 60_000);
    assert.equal((await ann.run(['send', bot.nick, 'ping 42'])).code, 0);
    const answer = await ann.run(['listen', '--json', '--once']);
    assert.equal(answer.code, 0, answer.stderr);
    assert.deepEqual((({ from, text }) => ({ from, text }))(JSON.parse(answer.stdout) as { from: string; text: string }), {
      from: bot.nick,
      text: 'echo: ping 42',
    });
  } finally {
    await running.stop();
  }
});
