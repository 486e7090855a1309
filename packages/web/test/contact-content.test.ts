/**
 * What a contact's message cannot make the web client do, over the real server: show the text of
 * another chat as the quote of a reply (a reply names its target by envelope id alone).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { ApiClient, cookieFetch, KDF_MIN, Messenger } from '@svc/sdk';
import { missingBrowser, type Device } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { chatEntry, messageItem, openChat, seeMessage, signUp, startChat } from './harness/ui.js';

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
});
