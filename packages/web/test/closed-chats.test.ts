/**
 * What the app says when a chat changes under the person: membership lines in a room's log
 * ("carol joined"), and a DM peer who deleted their account, whose chat stays in the list with its
 * composer disabled and the reason, found when the app next loads, before anyone tries to send.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { missingBrowser, type Device } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import {
  button,
  chatEntry,
  createRoom,
  ensureSignedIn,
  KDF_PATIENCE,
  messageBox,
  messageLog,
  openChat,
  openRoomSettings,
  seeMessage,
  send,
  signUp,
  startChat,
} from './harness/ui.js';

describe('web client: membership lines and closed chats', { skip: missingBrowser() }, () => {
  let scene: Scene;
  const password = 'closed chats password one';
  const people = { alice: nick('alice'), bob: nick('bob'), carol: nick('carol') };
  let alice: Device;
  let bob: Device;
  let carol: Device;

  before(async () => {
    scene = await openScene();
  });
  after(async () => {
    await scene?.close();
  });

  test('a member added to a room shows as a line of its own: "<nick> joined"', async () => {
    await scene.step(async () => {
      alice = await scene.device('alice');
      bob = await scene.device('bob');
      carol = await scene.device('carol');
      for (const [d, n] of [
        [alice, people.alice],
        [bob, people.bob],
        [carol, people.carol],
      ] as const)
        await signUp(d.page, n, password);
      const room = `Lines ${people.alice.slice(-6)}`;
      await createRoom(alice.page, room, [people.bob]);
      await openChat(bob.page, room);
      const hello = scene.text('before carol');
      await send(alice.page, hello);
      await seeMessage(bob.page, hello);

      await openRoomSettings(alice.page);
      await alice.page.getByRole('textbox', { name: 'Add people', exact: true }).fill(people.carol);
      await button(alice.page, 'Add').click();
      await seeMessage(bob.page, `${people.carol} joined`);
      // A membership line is not a message: it is never counted as unread.
      await chatEntry(carol.page, room).waitFor();
    })();
  });

  test('links (http and https only) open in a new tab with rel="noopener noreferrer"; nothing else becomes markup', async () => {
    await scene.step(async () => {
      await startChat(alice.page, people.bob);
      const marker = scene.text('links');
      const text = `${marker} see https://example.org/a?b=c, <b>bold</b> <img src=x onerror=alert(1)> javascript:alert(1) ftp://example.org/f`;
      await send(alice.page, text);
      await openChat(bob.page, people.alice);
      await seeMessage(bob.page, marker);
      // The message's row in the log (the chat list's entry shows the same text as its last message).
      const item = messageLog(bob.page).getByRole('listitem').filter({ hasText: marker });
      const links = item.getByRole('link');
      assert.equal(await links.count(), 1, 'only the https address is a link');
      assert.equal(await links.first().getAttribute('href'), 'https://example.org/a?b=c');
      assert.equal(await links.first().getAttribute('target'), '_blank');
      assert.equal(await links.first().getAttribute('rel'), 'noopener noreferrer');
      assert.equal(await item.locator('b, img').count(), 0, 'markup in a message stays text');
      await item.getByText('<b>bold</b>', { exact: false }).waitFor();
    })();
  });

  test('a contact who deleted their account: the chat says so and its composer is disabled, before any send', async () => {
    await scene.step(async () => {
      await startChat(bob.page, people.carol);
      const hi = scene.text('hi carol');
      await send(bob.page, hi);
      await openChat(carol.page, people.bob);
      await seeMessage(carol.page, hi);

      // Carol deletes her account (Settings, password, then the confirmation).
      await button(carol.page, 'Settings').click();
      await carol.page.getByLabel('Password to confirm', { exact: true }).fill(password);
      await button(carol.page, 'Delete account').first().click();
      const dialog = carol.page.getByRole('dialog');
      await dialog.getByRole('button', { name: 'Delete account', exact: true }).click();
      await button(carol.page, 'Create account').waitFor({ timeout: KDF_PATIENCE });

      // Bob's app, loaded again, knows before he types anything.
      await bob.page.reload();
      await ensureSignedIn(bob.page, people.bob, password);
      await chatEntry(bob.page, people.carol).waitFor();
      await openChat(bob.page, people.carol);
      await bob.page.getByText(`${people.carol} deleted their account`).first().waitFor();
      assert.equal(await messageBox(bob.page).isDisabled(), true, 'the composer is disabled');
      await seeMessage(bob.page, hi);
      // The app found out by looking the peer up: those 404s are the answer it wanted, not errors.
      const seen = bob.takeErrors();
      assert.ok(seen.length > 0 && seen.every((e) => e.includes(`404 GET /api/users/${people.carol}`)), seen.join('\n'));
    })();
  });
});
