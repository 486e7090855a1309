/**
 * Screenshots of the main screens, as the README shows them: sign-in, chat list, conversation,
 * room settings, a phone-width view, dark mode, and a chat with a photo, a file and a voice message. They go to docs/screenshots/ when
 * UPDATE_SCREENSHOTS=1, else to a temporary folder, so an ordinary test run leaves the tree clean.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { missingBrowser, type Device } from './harness/browser.js';
import { sendFiles } from './harness/files.js';
import { drawnJpeg } from './harness/jpeg.js';
import { openScene, type Scene } from './harness/scene.js';
import { repoRoot } from './harness/server.js';
import { allowMicrophone, record, voiceMessages } from './harness/voice.js';
import {
  button,
  chatEntry,
  chooseAction,
  messageBox,
  messageLog,
  react,
  reaction,
  statusShows,
  createRoom,
  ensureSignedIn,
  openChat,
  openRoomSettings,
  seeMessage,
  send,
  signUp,
  startChat,
} from './harness/ui.js';

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

describe('web client: screenshots of the main screens', { skip: missingBrowser() }, () => {
  let scene: Scene;
  let dir: string;
  let alice: Device;
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

  test('sign-in, chat list, conversation with a reply, a reaction and receipts, room settings, phone width, dark mode, the outbox countdown and a confirmation', async () => {
    await scene.step(async () => {
      const password = 'screenshot password';
      const [a, bob, carol] = await Promise.all([
        scene.device('alice', { viewport: DESKTOP }),
        scene.device('bob', { viewport: DESKTOP }),
        scene.device('carol', { viewport: DESKTOP }),
      ]);
      alice = a;
      await allowMicrophone(alice.context, scene.server.origin);

      await alice.page.goto('/');
      await button(alice.page, 'Create account').waitFor();
      await shot(alice, 'sign-in');

      await Promise.all([signUp(alice.page, 'alice', password), signUp(bob.page, 'bob', password), signUp(carol.page, 'carol', password)]);
      await createRoom(alice.page, 'Weekend trip', ['bob', 'carol']);
      await send(alice.page, 'I booked the cabin for Saturday.');
      await openChat(carol.page, 'Weekend trip');
      await send(carol.page, 'Great! I will bring the board games.');

      await startChat(alice.page, 'bob');
      await send(alice.page, 'Are we still on for lunch tomorrow?');
      await openChat(bob.page, 'alice');
      // A reply, a reaction and read receipts, as the README shows them.
      await chooseAction(bob.page, 'Are we still on for lunch tomorrow?', 'Reply');
      await send(bob.page, 'Yes, 12:30 at the usual place.');
      await seeMessage(alice.page, 'Yes, 12:30 at the usual place.');
      await react(alice.page, 'Yes, 12:30 at the usual place.', '👍');
      await send(alice.page, 'Perfect, see you there.');
      await seeMessage(bob.page, 'Perfect, see you there.');
      await reaction(bob.page, 'Yes, 12:30 at the usual place.', '👍 1').waitFor();
      await statusShows(alice.page, 'Perfect, see you there.', 'Read');

      await startChat(carol.page, 'alice');
      await send(carol.page, 'Did you get the photos from last weekend?');
      // alice has it before her page reloads: the chat list shows each chat's last message.
      const carolsEntry = chatEntry(alice.page, 'carol').filter({ hasText: 'Did you get the photos' });
      await carolsEntry.waitFor();

      // A fresh visit of the start address: the chat list with no chat open.
      await alice.page.goto('/');
      await ensureSignedIn(alice.page, 'alice', password);
      await carolsEntry.waitFor();
      await chatEntry(alice.page, 'Weekend trip').waitFor();
      await shot(alice, 'chat-list');

      await openChat(alice.page, 'bob');
      await seeMessage(alice.page, 'Perfect, see you there.');
      await shot(alice, 'conversation');

      await alice.page.emulateMedia({ colorScheme: 'dark' });
      await shot(alice, 'dark-mode');
      await alice.page.emulateMedia({ colorScheme: 'light' });

      await openChat(alice.page, 'Weekend trip');
      await seeMessage(alice.page, 'Great! I will bring the board games.');
      await openRoomSettings(alice.page);
      await button(alice.page, 'Delete room').waitFor();
      await shot(alice, 'room-settings');

      await bob.page.setViewportSize(PHONE);
      await seeMessage(bob.page, 'Perfect, see you there.');
      await shot(bob, 'phone');
      await bob.page.setViewportSize(DESKTOP);

      // The outbox waiting out the message limit: the service answers 429 for a while.
      await bob.page.route('**/api/messages', (route) =>
        route.fulfill({
          status: 429,
          contentType: 'application/json; charset=utf-8',
          headers: { 'Retry-After': '40' },
          body: '{"error":"rate_limited","message":"Too many messages."}',
        }),
      );
      await messageBox(bob.page).fill('Running 5 minutes late, sorry!');
      await button(bob.page, 'Send').click();
      await statusShows(bob.page, 'Running 5 minutes late, sorry!', /^Waiting to send, \d+ s$/);
      await shot(bob, 'outbox-countdown');
      await bob.page.unroute('**/api/messages');
      // Those 429s were the point of the picture, not an error of the app.
      bob.takeErrors();

      // No mistake is one key away: signing out asks first.
      await button(alice.page, 'Sign out').click();
      await alice.page.getByRole('dialog').waitFor();
      await shot(alice, 'confirm-sign-out');
      await alice.page.keyboard.press('Escape');

      // A photo, a file and a voice message in a chat, at desktop and phone width.
      await openChat(alice.page, 'bob');
      const picture = await drawnJpeg(alice.page, 1200, 800);
      await sendFiles(alice.page, [{ name: 'beach.jpg', mimeType: 'image/jpeg', buffer: picture }], 'The beach this morning');
      await sendFiles(alice.page, [{ name: 'tickets.pdf', mimeType: 'application/pdf', buffer: Buffer.alloc(182_000, 37) }]);
      await record(alice.page, 4);
      await button(alice.page, 'Send voice message').click();
      await openChat(bob.page, 'alice');
      await bob.page.getByRole('button', { name: 'Download tickets.pdf', exact: true }).waitFor({ timeout: 30_000 });
      await voiceMessages(bob.page).first().waitFor({ timeout: 30_000 });
      await bob.page.waitForFunction(() => Array.from(document.querySelectorAll('audio')).some((a) => Number.isFinite(a.duration) && a.duration > 0));
      await bob.page.waitForFunction(() =>
        Array.from(document.querySelectorAll('img')).some((i) => i.alt === 'beach.jpg' && i.naturalWidth === 1200),
      );
      await shot(bob, 'attachments');
      await bob.page.setViewportSize(PHONE);
      // The narrower page wraps the chat header onto more lines and the log keeps its scroll
      // position: scrolled to its end, as a reader would, it shows the voice message whole.
      await messageLog(bob.page).evaluate((log) => log.scrollTo(0, log.scrollHeight));
      await shot(bob, 'attachments-phone');
      await bob.page.setViewportSize(DESKTOP);
    })();
  });

  test('a grouped log: one head per run of messages, time and status icons in the last line', async () => {
    await scene.step(async () => {
      const password = 'screenshot password';
      const [maya, leo] = await Promise.all([scene.device('maya', { viewport: DESKTOP }), scene.device('leo', { viewport: DESKTOP })]);
      await Promise.all([signUp(maya.page, 'maya', password), signUp(leo.page, 'leo', password)]);
      await startChat(maya.page, 'leo');
      for (const t of ['Hi Leo!', 'Are you coming to the book club on Thursday?', 'We start at 7.']) await send(maya.page, t);
      await openChat(leo.page, 'maya');
      await seeMessage(leo.page, 'We start at 7.');
      for (const t of ['Hey! Yes, I will be there.', 'Which book is it this time?']) await send(leo.page, t);
      await seeMessage(maya.page, 'Which book is it this time?');
      for (const t of ['"The Left Hand of Darkness".', 'Bring snacks if you can.']) await send(maya.page, t);
      await seeMessage(leo.page, 'Bring snacks if you can.');
      await send(leo.page, 'Deal, see you then.');
      await statusShows(leo.page, 'Deal, see you then.', 'Read');
      await statusShows(leo.page, 'Which book is it this time?', 'Read');
      await leo.page.mouse.move(0, 0);
      await shot(leo, 'grouped-log');
    })();
  });
});
