/**
 * What people expect of a messenger, end to end over the real server at its default message
 * limit: replies, reactions, edits, delete for everyone on every device, delivery and read
 * receipts, search across chats, a fast typist who never sees a message refused because receipts
 * spent the budget, and none of the texts, reactions or search terms in the database.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { missingBrowser, type Device } from './harness/browser.js';
import { plaintextFound, queueLength } from './harness/db.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import {
  actionsOffered,
  button,
  chatEntry,
  chooseAction,
  ensureSignedIn,
  messageBox,
  messageItem,
  messageLog,
  messageStatus,
  openChat,
  react,
  searchBox,
  searchResults,
  seeMessage,
  send,
  signIn,
  signUp,
  startChat,
  statusShows,
} from './harness/ui.js';
import { until } from './harness/wait.js';

/** 25 messages at 30 a minute never wait; if the app had to pace them, a minute more is fair. */
const BURST_PATIENCE = 90_000;

/** Every status and alert text the page shows from now on, as seen by a MutationObserver. */
async function recordStatuses(page: Page): Promise<() => Promise<string[]>> {
  await page.evaluate(() => {
    const seen = new Set<string>();
    (window as unknown as { statusesSeen: Set<string> }).statusesSeen = seen;
    const scan = () => {
      document.querySelectorAll('[role=status],[role=alert]').forEach((el) => {
        const t = (el.getAttribute('aria-label') ?? el.textContent ?? '').trim();
        if (t) seen.add(t);
      });
    };
    new MutationObserver(scan).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
    scan();
  });
  return () => page.evaluate(() => [...(window as unknown as { statusesSeen: Set<string> }).statusesSeen]);
}

describe('web client: replies, reactions, edits, deletion, receipts and search', { skip: missingBrowser() }, () => {
  let scene: Scene;
  const password = 'a long features password';
  const people = { alice: nick('alice'), bob: nick('bob'), carol: nick('carol'), erin: nick('erin'), frank: nick('frank') };
  let alice: Device;
  let bob: Device;
  let bobPhone: Device;
  /** Typed besides the message texts (which scene.typed holds): reactions and search terms. */
  const alsoTyped: string[] = [];

  before(async () => {
    scene = await openScene({ defaultMessageLimit: true });
    await scene.step(async () => {
      [alice, bob] = await Promise.all([scene.device('alice'), scene.device('bob laptop')]);
      await Promise.all([signUp(alice.page, people.alice, password), signUp(bob.page, people.bob, password)]);
      await startChat(alice.page, people.bob);
      const hello = scene.text('hello bob');
      await send(alice.page, hello);
      await chatEntry(bob.page, people.alice).waitFor();
      await openChat(bob.page, people.alice);
      await seeMessage(bob.page, hello);
    })();
  });
  after(async () => {
    await scene?.close();
  });

  test('a reply shows the quoted message to the peer, and "Cancel reply" cancels it', async () => {
    await scene.step(async () => {
      const question = scene.text('alice asks a question');
      await send(alice.page, question);
      await seeMessage(bob.page, question);
      const replying = bob.page.getByText(`Replying to ${people.alice}`, { exact: true });

      await chooseAction(bob.page, question, 'Reply');
      await replying.waitFor();
      await button(bob.page, 'Cancel reply').click();
      await replying.waitFor({ state: 'hidden' });
      const plain = scene.text('bob writes no reply after all');
      await send(bob.page, plain);
      await seeMessage(alice.page, plain);
      const quoteIn = (page: Page, text: string) => messageItem(page, text).getByRole('button', { name: /^Reply to / });
      assert.equal(await quoteIn(alice.page, plain).count(), 0, 'a cancelled reply is sent as a plain message');

      await chooseAction(bob.page, question, 'Reply');
      await replying.waitFor();
      const answer = scene.text('bob answers the question');
      await send(bob.page, answer);
      await replying.waitFor({ state: 'hidden' });
      await messageItem(bob.page, answer)
        .getByRole('button', { name: `Reply to ${people.alice}: ${question}`, exact: true })
        .waitFor();
      // Alice sees her own words quoted above Bob's answer.
      await seeMessage(alice.page, answer);
      await messageItem(alice.page, answer)
        .getByRole('button', { name: `Reply to You: ${question}`, exact: true })
        .waitFor();
    })();
  });

  test("a reaction shows to the peer with its count, and pressing one's own reaction removes it on both sides", async () => {
    await scene.step(async () => {
      const news = scene.text('alice shares news');
      await send(alice.page, news);
      await seeMessage(bob.page, news);
      // Bob's read receipt may arrive at any moment; the reactions start once it has, so that
      // what the checks below see changing is the reactions alone.
      await statusShows(alice.page, news, 'Read');
      alsoTyped.push('👍');
      const thumbs = (page: Page, count: number, mine: boolean) =>
        messageItem(page, news).getByRole('button', { name: `👍 ${count}`, exact: true, pressed: mine });

      await react(bob.page, news, '👍');
      await thumbs(bob.page, 1, true).waitFor();
      await thumbs(alice.page, 1, false).waitFor();

      await react(alice.page, news, '👍');
      await thumbs(alice.page, 2, true).waitFor();
      await thumbs(bob.page, 2, true).waitFor();

      // Bob presses his own reaction: it goes, Alice's stays.
      await thumbs(bob.page, 2, true).click();
      await thumbs(bob.page, 1, false).waitFor();
      await thumbs(alice.page, 1, true).waitFor();

      await thumbs(alice.page, 1, true).click();
      for (const page of [alice.page, bob.page]) {
        await messageItem(page, news).getByRole('button', { name: /^👍/ }).waitFor({ state: 'detached' });
      }
    })();
  });

  test('an edit shows the new text and "(edited)" to the peer, and Edit is offered only on one\'s own messages', async () => {
    await scene.step(async () => {
      const draft = scene.text('alice first draft');
      await send(alice.page, draft);
      await seeMessage(bob.page, draft);
      assert.deepEqual(
        await actionsOffered(bob.page, draft),
        ['Reply', 'React', 'Pin'],
        "bob may not edit or delete alice's message, but may pin it",
      );

      await chooseAction(alice.page, draft, 'Edit');
      assert.equal(await messageBox(alice.page).inputValue(), draft, 'Edit puts the text in the message box');
      const fixed = scene.text('alice corrected text');
      await messageBox(alice.page).fill(fixed);
      await messageBox(alice.page).press('Enter');

      for (const page of [alice.page, bob.page]) {
        await seeMessage(page, fixed);
        await messageItem(page, fixed).getByText('(edited)', { exact: true }).waitFor();
        assert.equal(await messageLog(page).getByText(draft).count(), 0, 'the first draft is gone');
      }
    })();
  });

  test("delete for everyone replaces the message on both of the peer's devices, and is not offered on others' messages", async () => {
    await scene.step(async () => {
      bobPhone = await scene.device('bob phone');
      await signIn(bobPhone.page, people.bob, password);
      const regret = scene.text('alice regrets this one');
      await send(alice.page, regret);
      await seeMessage(bob.page, regret);
      await chatEntry(bobPhone.page, people.alice).waitFor();
      await openChat(bobPhone.page, people.alice);
      await seeMessage(bobPhone.page, regret);

      const bobs = scene.text('bob says something alice cannot delete');
      await send(bob.page, bobs);
      await seeMessage(alice.page, bobs);
      const offered = await actionsOffered(alice.page, bobs);
      assert.ok(!offered.includes('Delete for everyone'), `offered on bob's message: ${offered.join(', ')}`);

      await chooseAction(alice.page, regret, 'Delete for everyone');
      for (const page of [alice.page, bob.page, bobPhone.page]) {
        await messageLog(page).getByText(regret).waitFor({ state: 'detached' });
        await messageLog(page).getByRole('listitem').filter({ hasText: 'Message deleted' }).first().waitFor();
      }
      await seeMessage(bobPhone.page, bobs);
    })();
  });

  test('receipts: one\'s own message goes from "Sent" to "Delivered" and "Read" once the peer opens the chat, its row updated in place', async () => {
    await scene.step(async () => {
      // Bob is away: no page of his is open to report anything.
      const bobDevice = bob.deviceIds.at(-1);
      assert.ok(bobDevice, "bob's laptop never opened its event stream");
      await bob.page.close();
      await bobPhone.page.close();
      const ping = scene.text('are you there bob');
      await send(alice.page, ping);
      await statusShows(alice.page, ping, 'Sent');
      // The service holds it for Bob's devices; nothing can say more until one of them is back.
      await until("the message queued for bob's laptop", () => (queueLength(scene.server.dbPath, bobDevice) > 0 ? true : undefined));
      // The status is an icon: its accessible name carries the word.
      assert.equal(await messageStatus(alice.page, ping).getAttribute('aria-label'), 'Sent');
      // The row itself stays while its status changes: a click on its buttons as a receipt
      // arrives must not fall on a button that is being replaced.
      const actions = await messageItem(alice.page, ping).getByRole('button', { name: 'Message actions' }).elementHandle();
      assert.ok(actions);

      // Bob's app opens on its chat list: the message is delivered, not yet read.
      const page = await bob.reopen();
      await ensureSignedIn(page, people.bob, password);
      await statusShows(alice.page, ping, 'Delivered');
      await openChat(page, people.alice);
      await seeMessage(page, ping);
      await statusShows(alice.page, ping, 'Read');
      assert.equal(await actions.evaluate((b) => b.isConnected), true, 'the row was updated in place, not drawn anew');
    })();
  });

  test('search finds a message in another chat and opens that chat at the message', async () => {
    await scene.step(async () => {
      const carol = await scene.device('carol');
      await signUp(carol.page, people.carol, password);
      await startChat(carol.page, people.alice);
      const term = `quokka${randomBytes(4).toString('hex')}`;
      alsoTyped.push(term);
      const found = scene.text(`lunch at the ${term} place`);
      await send(carol.page, found);
      await send(carol.page, scene.text('carol says something else'));
      await chatEntry(alice.page, people.carol).waitFor();

      // Alice looks at her chat with Bob, not Carol's.
      await openChat(alice.page, people.bob);
      assert.equal(await messageLog(alice.page).getByText(found).count(), 0);
      await searchBox(alice.page).fill(term);
      const hit = searchResults(alice.page).filter({ hasText: term });
      await hit.waitFor();
      assert.equal(await searchResults(alice.page).count(), 1, 'one message holds the term');
      await hit.click();

      await alice.page.getByRole('heading', { name: people.carol, exact: true }).waitFor();
      await messageItem(alice.page, found).waitFor({ state: 'visible' });
      assert.ok(await messageBox(alice.page).isVisible(), "carol's chat is open, ready to answer");
    })();
  });

  test('the rate limit shared with receipts: 25 messages sent in a minute all arrive in order, none refused', async () => {
    await scene.step(async () => {
      const [erin, frank] = await Promise.all([scene.device('erin'), scene.device('frank')]);
      await Promise.all([signUp(erin.page, people.erin, password), signUp(frank.page, people.frank, password)]);
      // Frank writes first, so Erin's app owes him receipts while she types.
      await startChat(frank.page, people.erin);
      await send(frank.page, scene.text('frank says hi'));
      await chatEntry(erin.page, people.frank).waitFor();
      await openChat(erin.page, people.frank);
      const statuses = await recordStatuses(erin.page);

      const burst: string[] = [];
      const started = Date.now();
      for (let i = 1; i <= 25; i++) {
        const t = scene.text(`erin burst ${String(i).padStart(2, '0')}`);
        burst.push(t);
        await send(erin.page, t);
        // Frank answers in the middle: more receipts for Erin to send while she types.
        if (i === 12) await send(frank.page, scene.text('frank answers mid burst'));
      }
      const typing = Date.now() - started;
      assert.ok(typing < 60_000, `the 25 messages were typed in ${typing} ms, not within a minute`);

      await seeMessage(frank.page, burst.at(-1)!, BURST_PATIENCE);
      const rows = await messageLog(frank.page).getByRole('listitem').allInnerTexts();
      const arrived = rows.map((r) => burst.find((t) => r.includes(t))).filter((t): t is string => t !== undefined);
      assert.deepEqual(arrived, burst, 'all 25 reach frank, in the order typed');

      // Frank has the chat open: every one of them comes back as read.
      for (const t of burst) await statusShows(erin.page, t, 'Read', BURST_PATIENCE);
      const shown = await statuses();
      const allowed = /^(Sending|Waiting to send, \d+ s|Sent|Delivered|Read|Connected|Connecting…|Catching up…)$/;
      assert.deepEqual(
        shown.filter((s) => !allowed.test(s)),
        [],
        'erin was never shown "Not sent" or an error',
      );
    })();
  });

  test('the database holds none of the message texts, reactions or search terms typed', () => {
    assert.ok(scene.typed.length >= 30 && alsoTyped.length >= 2, 'the scenarios above typed the texts');
    assert.deepEqual(plaintextFound(scene.server.dbPath, [people.alice]), [people.alice], 'the scan finds open metadata, so it reads the right file');
    assert.deepEqual(plaintextFound(scene.server.dbPath, [...scene.typed, ...alsoTyped]), []);
  });
});
