/**
 * Pacing under the message limit (docs/WEB.md, "Sending: the outbox, pacing, and the shared
 * budget"): typed faster than the limit allows, every message still arrives, in order, with a
 * live countdown and no refusal. A file of its own, on its own server at the default message
 * limit (30 a minute per nick), because it waits out most of a minute: the runner overlaps that
 * wait with the other browser files instead of adding it to the outbox suite's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { missingBrowser } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { button, chatEntry, messageBox, messageItem, messageLog, openChat, signUp, startChat } from './harness/ui.js';
import { until } from './harness/wait.js';

const DONE = /^(Sent|Delivered|Read)$/;
const COUNTDOWN = /^Waiting to send, (\d+) s$/;

/** The status of the message holding `text` (each text of this test is unique). */
function rowStatus(page: Page, text: string, name: RegExp | string) {
  return messageItem(page, text).getByRole('status', { name, exact: true });
}

describe('web client: pacing under the message limit', { skip: missingBrowser() }, () => {
  let scene: Scene;

  before(async () => {
    scene = await openScene({ defaultMessageLimit: true });
  });
  after(async () => {
    await scene?.close();
  });

  test(
    '40 messages typed within a minute at the default limit all arrive in order, counting down meanwhile, with no error',
    { timeout: 300_000 },
    async () => {
      await scene.step(async () => {
        const carol = { nick: nick('carol'), password: 'carol outbox password' };
        const dave = { nick: nick('dave'), password: 'dave outbox password' };
        const carolLaptop = await scene.device('carol laptop');
        const daveLaptop = await scene.device('dave laptop');
        const c = carolLaptop.page;
        const d = daveLaptop.page;
        await Promise.all([signUp(c, carol.nick, carol.password), signUp(d, dave.nick, dave.password)]);
        await startChat(c, dave.nick);
        let refusals = 0;
        c.on('response', (res) => {
          if (res.status() === 429) refusals += 1;
        });

        const texts = Array.from({ length: 40 }, (_, i) => scene.text(`lively chat ${String(i + 1).padStart(2, '0')}`));
        const started = Date.now();
        for (const t of texts) {
          await messageBox(c).fill(t);
          await messageBox(c).press('Enter');
        }
        await messageItem(c, texts.at(-1)!).waitFor();
        assert.ok(Date.now() - started < 60_000, 'the 40 messages were typed within a minute');

        // The last one waits for the budget, and its countdown runs every second.
        const last = rowStatus(c, texts.at(-1)!, COUNTDOWN);
        await last.waitFor();
        const seconds = async () => Number(COUNTDOWN.exec((await last.getAttribute('aria-label')) ?? '')?.[1]);
        const first = await seconds();
        const since = Date.now();
        const second = await until(
          'the countdown to go down',
          async () => {
            const n = await seconds();
            return n < first ? n : undefined;
          },
          5_000,
        );
        const took = (Date.now() - since) / 1000;
        assert.ok(first - second <= took + 2, `the countdown went from ${first} s to ${second} s in ${took} s`);

        await chatEntry(d, carol.nick).waitFor();
        await openChat(d, carol.nick);
        const received = await until(
          'all 40 messages at dave',
          async () => {
            assert.equal(await c.getByRole('status', { name: 'Not sent', exact: true }).count(), 0, 'no message shows Not sent');
            assert.equal(await button(c, 'Retry').count(), 0, 'nothing asks for Retry');
            const shown = await messageLog(d).getByRole('listitem').allTextContents();
            const order = shown.map((s) => texts.findIndex((t) => s.includes(t))).filter((i) => i >= 0);
            return order.length >= texts.length ? order : undefined;
          },
          180_000,
        );
        assert.deepEqual(
          received,
          texts.map((_, i) => i),
          'dave has each message once, in the order typed',
        );
        for (const t of texts) await rowStatus(c, t, DONE).waitFor();
        assert.equal(refusals, 0, 'the client paced itself: the service never had to refuse');
        assert.equal(await c.getByRole('status', { name: 'Not sent', exact: true }).count(), 0);
      })();
    },
  );
});
