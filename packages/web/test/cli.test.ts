/**
 * svc, the command-line client, with a person on the web client: what a script sends to a person
 * and to a room shows in Chromium, and what the person writes reaches `svc listen --json`, with
 * no delivery receipt going back from the script.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { missingBrowser, type Device } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { repoRoot } from './harness/server.js';
import { chatEntry, createRoom, openChat, seeMessage, send, signUp, statusShows } from './harness/ui.js';
import { until } from './harness/wait.js';

const CLI = join(repoRoot, 'packages/cli/dist/src/main.js');

/** The script's machine: its own config folder; the password only in SVC_PASSWORD. */
function machine(password: string) {
  const home = mkdtempSync(join(tmpdir(), 'svc-cli-web-'));
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, XDG_CONFIG_HOME: home, SVC_PASSWORD: password };
  return {
    home,
    run(args: string[]): Promise<{ code: number | null; stderr: string }> {
      return new Promise((resolve, reject) => {
        const p = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        p.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
        p.on('error', reject);
        p.on('close', (code) => resolve({ code, stderr }));
      });
    },
    listen() {
      const p = spawn(process.execPath, [CLI, 'listen', '--json'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      const out = { stdout: '', stderr: '', proc: p };
      p.stdout.on('data', (b: Buffer) => (out.stdout += b.toString()));
      p.stderr.on('data', (b: Buffer) => (out.stderr += b.toString()));
      return out;
    },
  };
}

describe('svc with the web client', { skip: missingBrowser() }, () => {
  let scene: Scene;
  let alice: Device;
  const names = { alice: nick('alice'), bot: nick('bot') };
  const room = `ops ${names.bot.slice(-6)}`;
  const script = machine('bot password of the script');

  before(async () => {
    scene = await openScene();
    alice = await scene.device('alice');
    await signUp(alice.page, names.alice, 'alice password for the cli');
    const up = await script.run(['signup', '--server', scene.server.origin, '--nick', names.bot]);
    assert.equal(up.code, 0, up.stderr);
  });
  after(async () => {
    await scene?.close();
    rmSync(script.home, { recursive: true, force: true });
  });

  test('a message svc sends to a person and one to a room show in Chromium', async () => {
    await scene.step(async () => {
      const dm = scene.text('deploy done');
      const sent = await script.run(['send', names.alice, dm]);
      assert.equal(sent.code, 0, sent.stderr);
      await chatEntry(alice.page, names.bot).waitFor();
      await openChat(alice.page, names.bot);
      await seeMessage(alice.page, dm);

      await createRoom(alice.page, room, [names.bot]);
      const toRoom = scene.text('backup ok');
      const r = await script.run(['send', '--room', room, toRoom]);
      assert.equal(r.code, 0, r.stderr);
      await seeMessage(alice.page, toRoom);
    })();
  });

  test('what the person writes reaches svc listen --json, and no receipt goes back', async () => {
    await scene.step(async () => {
      const listening = script.listen();
      try {
        await until('svc listen to be live', () => (listening.stderr.includes('listening') ? true : undefined));
        const inRoom = scene.text('to the room, from the browser');
        await send(alice.page, inRoom);
        await openChat(alice.page, names.bot);
        const direct = scene.text('to the bot, from the browser');
        await send(alice.page, direct);
        const lines = await until('both messages printed', () => {
          const l = listening.stdout.split('\n').filter(Boolean);
          return l.length >= 2 ? l.map((x) => JSON.parse(x) as Record<string, string>) : undefined;
        });
        const pick = ({ chat, room: r, from, type, text }: Record<string, string>) => ({ chat: chat!.split(':')[0], room: r, from, type, text });
        assert.deepEqual(lines.map(pick), [
          { chat: 'room', room, from: names.alice, type: 'text', text: inRoom },
          { chat: 'dm', room: undefined, from: names.alice, type: 'text', text: direct },
        ]);
        assert.equal(lines[1]!.chat, `dm:${names.alice}`);
        // A script reports nothing back: the person's message stays "Sent", never "Delivered".
        await new Promise((r) => setTimeout(r, 3_000));
        await statusShows(alice.page, direct, 'Sent');
      } finally {
        listening.proc.kill('SIGTERM');
      }
    })();
  });
});
