/**
 * Screenshots of the chat header's controls, as the README shows them: a room with pinned
 * messages, and the "Disappearing messages" dialog. They go to docs/screenshots/ when
 * UPDATE_SCREENSHOTS=1, else to a temporary folder, so an ordinary test run leaves the tree clean.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { missingBrowser, type Device } from './harness/browser.js';
import { openScene, type Scene } from './harness/scene.js';
import { repoRoot } from './harness/server.js';
import { button, chooseAction, createRoom, openChat, seeMessage, send, signUp } from './harness/ui.js';

const DESKTOP = { width: 1280, height: 800 };

describe('web client: screenshots of pinned messages and disappearing messages', { skip: missingBrowser() }, () => {
  let scene: Scene;
  let dir: string;
  const shot = async (device: Device, name: string) => {
    const file = join(dir, `${name}.png`);
    await device.page.screenshot({ path: file });
    const png = readFileSync(file);
    assert.ok(png.length > 1000 && png.subarray(1, 4).toString() === 'PNG', `${name}.png is a picture`);
  };

  before(async () => {
    scene = await openScene();
    dir = process.env.UPDATE_SCREENSHOTS === '1' ? join(repoRoot, 'docs/screenshots') : join(scene.server.dir, 'screenshots');
    mkdirSync(dir, { recursive: true });
  });
  after(async () => {
    await scene?.close();
  });

  test('a room with two pinned messages, and the Disappearing messages dialog', async () => {
    await scene.step(async () => {
      const password = 'screenshot password';
      const [alice, bob] = await Promise.all([scene.device('alice', { viewport: DESKTOP }), scene.device('bob', { viewport: DESKTOP })]);
      await Promise.all([signUp(alice.page, 'alice', password), signUp(bob.page, 'bob', password)]);
      await createRoom(alice.page, 'Weekend trip', ['bob']);
      await send(alice.page, 'The cabin: 14 Long Street, Lakeside. Key code 4711.');
      await send(alice.page, 'Train leaves Saturday 9:12 from platform 3.');
      await openChat(bob.page, 'Weekend trip');
      await seeMessage(bob.page, 'Train leaves Saturday 9:12 from platform 3.');
      await send(bob.page, 'I will bring the board games.');
      await send(alice.page, 'Perfect!');
      await chooseAction(bob.page, 'The cabin: 14 Long Street', 'Pin');
      await chooseAction(alice.page, 'Train leaves Saturday', 'Pin');
      const pinned = bob.page.getByRole('region', { name: 'Pinned messages', exact: true });
      await pinned.getByRole('button').nth(1).waitFor();
      await seeMessage(bob.page, 'Perfect!');
      await shot(bob, 'pinned-messages');

      await button(alice.page, 'Disappearing messages').click();
      const dialog = alice.page.getByRole('dialog', { name: 'Disappearing messages', exact: true });
      await dialog.getByRole('radio', { name: '1 day', exact: true }).check();
      await shot(alice, 'disappearing-messages');
      await dialog.getByRole('button', { name: 'Save', exact: true }).click();
      await seeMessage(bob.page, 'alice set disappearing messages to 1 day');
    })();
  });
});
