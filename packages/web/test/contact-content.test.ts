/**
 * What a contact's message cannot make the web client do, over the real server: show the text of
 * another chat as the quote of a reply (a reply names its target by envelope id alone), or open
 * the app on the sign-in screen with an error through a link to a malformed address (`/#%`).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { ApiClient, cookieFetch, KDF_MIN, Messenger } from '@svc/sdk';
import { missingBrowser, type Device } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { chatEntry, chatList, messageItem, nickInput, openChat, seeMessage, signUp, startChat } from './harness/ui.js';

describe('web client: replies and links a contact sends', { skip: missingBrowser() }, () => {
  let scene: Scene;
  const people = { alice: nick('alice'), bob: nick('bob'), carol: nick('carol') };
  let alice: Device;
  let bob: Messenger;
  let carol: Messenger;

  before(async () => {
    scene = await openScene();
    await scene.step(async () => {
      alice = await scene.device('alice');
      await signUp(alice.page, people.alice, 'a long contact content password');
      // Bob and Carol are Node programs on the SDK: Carol's client is free to name any id.
      const node = () => new Messenger({ api: new ApiClient({ baseUrl: scene.server.origin, origin: scene.server.origin, fetch: cookieFetch() }) });
      bob = node();
      carol = node();
      await bob.register({ nick: people.bob, password: 'bob contact password', kdf: KDF_MIN });
      await carol.register({ nick: people.carol, password: 'carol contact password', kdf: KDF_MIN });
      await bob.ensureDevice('bob-node-1');
      await carol.ensureDevice('carol-node-1');
      await startChat(alice.page, people.bob);
      await startChat(alice.page, people.carol);
    })();
  });
  after(async () => {
    await scene?.close();
  });

  const quoteIn = (page: Page, text: string) => messageItem(page, text).getByRole('button', { name: /^Reply to / });

  test('a reply shows a quote only from its own chat: one naming a message of another chat reads as not loaded', async () => {
    await scene.step(async () => {
      const secret = scene.text('between alice and bob only');
      const sent = await bob.sendDm(people.alice, secret);
      await openChat(alice.page, people.bob);
      await seeMessage(alice.page, secret);

      // Carol learned the id of Bob's message and quotes it in her chat with Alice.
      const sly = scene.text('carol quotes what she should not see');
      await carol.send(`dm:${people.alice}`, { type: 'text', body: sly, sentAt: 0, replyTo: sent.id });
      const own = scene.text('carol says something');
      const mine = await carol.sendDm(people.alice, own);
      const honest = scene.text('carol quotes herself');
      await carol.send(`dm:${people.alice}`, { type: 'text', body: honest, sentAt: 0, replyTo: mine.id });
      await chatEntry(alice.page, people.carol).waitFor();
      await openChat(alice.page, people.carol);
      await seeMessage(alice.page, honest);

      // A quote of the same chat shows (so the other one has had its chance to load too).
      await messageItem(alice.page, honest)
        .getByRole('button', { name: `Reply to ${people.carol}: ${own}`, exact: true })
        .waitFor();
      const quote = quoteIn(alice.page, sly);
      assert.equal(await quote.getAttribute('aria-label'), 'Reply to a message: Original message not loaded');
      assert.equal((await alice.page.getByRole('log').textContent())?.includes(secret), false, "Bob's text shows nowhere in Carol's chat");
    })();
  });

  /** The signed-in app's home view in `page`: the chat list, no sign-in form, no error. */
  async function atHome(page: Page): Promise<void> {
    await chatList(page).waitFor();
    await chatEntry(page, people.bob).waitFor();
    assert.equal(await nickInput(page).count(), 0, 'not the sign-in screen');
    assert.equal(await page.getByText(/Could not reopen|failed to start|URI/).count(), 0, 'no error shown');
  }

  test('an address whose hash does not decode (/#%) opens the home view of the signed-in app, typed or clicked in a message', async () => {
    await scene.step(async () => {
      // Typed (or pasted) into a new tab of the same browser.
      const typed = await alice.context.newPage();
      await typed.goto('/#%');
      await atHome(typed);
      await typed.close();

      // A link in a message opens a new tab (target _blank) on the same address.
      const text = scene.text('look at this');
      const url = `${scene.server.origin}/#%`;
      await carol.sendDm(people.alice, `${text} ${url}`);
      await openChat(alice.page, people.carol);
      await seeMessage(alice.page, text);
      const [tab] = await Promise.all([alice.context.waitForEvent('page'), messageItem(alice.page, text).getByRole('link', { name: url }).click()]);
      await tab.waitForLoadState();
      assert.equal(new URL(tab.url()).hash, '#%');
      await atHome(tab);
      await tab.close();

      // In the open tab, the address changing to it goes home too.
      await alice.page.evaluate(() => (location.hash = '#%'));
      await atHome(alice.page);
      assert.equal(await alice.page.getByRole('log').count(), 0, 'no chat open');
    })();
  });
});
