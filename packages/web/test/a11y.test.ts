/**
 * Accessibility: axe-core finds no violation of any impact (minor to critical) on every screen:
 * the sign-in screen, the chat list, an open DM with messages from both sides, an open room with
 * its settings, and Settings, in light and dark colour schemes.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { allViolations } from './harness/axe.js';
import { missingBrowser, type Device } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { button, chatEntry, createRoom, openChat, openRoomSettings, seeMessage, send, signUp, startChat } from './harness/ui.js';

describe('web client: accessibility', { skip: missingBrowser() }, () => {
  let scene: Scene;
  let alice: Device;
  let bob: Device;
  const names = { alice: nick('alice'), bob: nick('bob') };

  before(async () => {
    scene = await openScene();
    [alice, bob] = await Promise.all([scene.device('alice'), scene.device('bob')]);
  });
  after(async () => {
    await scene?.close();
  });

  async function assertAccessible(device: Device, screen: string): Promise<void> {
    for (const colorScheme of ['light', 'dark'] as const) {
      await device.page.emulateMedia({ colorScheme });
      assert.deepEqual(await allViolations(device.page), [], `${screen} (${colorScheme})`);
    }
    await device.page.emulateMedia({ colorScheme: 'light' });
  }

  test('the sign-in screen', async () => {
    await scene.step(async () => {
      await alice.page.goto('/');
      await button(alice.page, 'Create account').waitFor();
      await assertAccessible(alice, 'sign-in screen');
    })();
  });

  test('the chat list', async () => {
    await scene.step(async () => {
      await Promise.all([signUp(alice.page, names.alice, 'alice a11y password'), signUp(bob.page, names.bob, 'bob a11y password')]);
      await startChat(alice.page, names.bob);
      await send(alice.page, scene.text('hello from alice'));
      await chatEntry(bob.page, names.alice).waitFor();
      await assertAccessible(bob, 'chat list');
    })();
  });

  test('an open DM', async () => {
    await scene.step(async () => {
      await openChat(bob.page, names.alice);
      await seeMessage(bob.page, scene.typed[0]!);
      await send(bob.page, scene.text('hello back from bob'));
      await assertAccessible(bob, 'open DM');
    })();
  });

  test('an open room with its settings', async () => {
    await scene.step(async () => {
      const room = `a11y room ${randomBytes(3).toString('hex')}`;
      await createRoom(alice.page, room, [names.bob]);
      await send(alice.page, scene.text('hello room'));
      await openRoomSettings(alice.page);
      await button(alice.page, 'Leave room').waitFor();
      await assertAccessible(alice, 'open room with settings');
    })();
  });

  test('Settings', async () => {
    await scene.step(async () => {
      await button(bob.page, 'Settings').click();
      await button(bob.page, 'Remove this device').waitFor();
      await assertAccessible(bob, 'Settings');
    })();
  });
});
