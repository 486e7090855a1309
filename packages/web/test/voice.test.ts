/**
 * Voice messages in the web client, over the real server and Chromium's fake microphone: one
 * recorded in a DM reaches the other side as an audio player named "Voice message" with its
 * duration and waveform, and plays (from a same-origin /media/ URL the service worker answers,
 * with 206 for a range, since the CSP allows no blob: or data: media); "Cancel recording" sends
 * nothing; either way the microphone is let go; a voice message in a room; one recorded offline
 * goes once the network is back; a refused microphone is said in the composer; a page loaded past the service worker (a hard reload) still plays; a
 * recording stops by itself before the file would be over the service's limit. The chat and the
 * recording panel have no accessibility violations.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { allViolations } from './harness/axe.js';
import { CHROMIUM, launchBrowser } from '@svc/testkit/browser';
import { missingBrowser, openDevice, type Device } from './harness/browser.js';
import { attachmentCount } from './harness/db.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { button, chatEntry, createRoom, messageBox, messageLog, openChat, seeMessage, send, signUp, startChat } from './harness/ui.js';
import { allowMicrophone, microphoneTracks, play, record, shownSeconds, voiceMessages } from './harness/voice.js';
import { until } from './harness/wait.js';

/** Waits until `page` shows `n` voice messages in the open chat. */
async function voiceCount(page: Page, n: number): Promise<void> {
  await page.waitForFunction((n) => document.querySelectorAll('[role="log"] audio[aria-label="Voice message"]').length === n, n, {
    timeout: 30_000,
  });
}

/** What the service worker answers for `path` with a Range header, from inside the page. */
function fetchRange(page: Page, path: string, range: string | null) {
  return page.evaluate(
    async ([path, range]) => {
      const res = await fetch(path, range ? { headers: { Range: range } } : {});
      const bytes = new Uint8Array(await res.arrayBuffer());
      return {
        status: res.status,
        type: res.headers.get('content-type'),
        contentRange: res.headers.get('content-range'),
        length: bytes.length,
        head: [...bytes.subarray(0, 4)],
      };
    },
    [path, range] as const,
  );
}

describe('web client: voice messages', { skip: missingBrowser() }, () => {
  let scene: Scene;
  let alice: Device;
  let bob: Device;
  const aliceNick = nick('alice');
  const bobNick = nick('bob');
  const closeLater: (() => Promise<void>)[] = [];

  before(async () => {
    scene = await openScene();
    alice = await scene.device('alice');
    bob = await scene.device('bob');
    await allowMicrophone(alice.context, scene.server.origin);
    await allowMicrophone(bob.context, scene.server.origin);
    await Promise.all([signUp(alice.page, aliceNick, 'alice password one'), signUp(bob.page, bobNick, 'bob password one')]);
    await startChat(alice.page, bobNick);
    await send(alice.page, 'hello');
    await openChat(bob.page, aliceNick);
    await seeMessage(bob.page, 'hello');
  });
  after(async () => {
    for (const close of closeLater) await close().catch(() => undefined);
    await scene?.close();
  });

  test('a voice message recorded in a DM reaches the other side with its duration and waveform, plays from the service worker, and lets go of the microphone', async () => {
    await scene.step(async () => {
      const started = Date.now();
      await record(alice.page, 3);
      // The time recorded shows while recording; screen readers are not told it every second.
      assert.equal(await alice.page.getByRole('timer').getAttribute('aria-live'), null);
      assert.deepEqual(await allViolations(alice.page), [], 'the recording panel');
      await button(alice.page, 'Send voice message').click();
      // The recording ran until Send: on a slow machine the checks above add seconds to it.
      const recorded = (Date.now() - started) / 1000;
      await messageBox(alice.page).waitFor();
      assert.deepEqual(await microphoneTracks(alice.page), { got: 1, live: 0 }, 'the microphone is released after sending');

      await voiceCount(bob.page, 1);
      const heard = voiceMessages(bob.page).first();
      const seconds = await shownSeconds(heard);
      assert.ok(seconds >= 3 && seconds <= Math.ceil(recorded) + 1, `the duration shown (${seconds} s) is the time recorded (${recorded} s)`);
      const bars = await heard.evaluate((a) => {
        const svg = a.parentElement?.querySelector('svg');
        return {
          hidden: svg?.getAttribute('aria-hidden'),
          heights: Array.from(svg?.querySelectorAll('rect') ?? []).map((r) => Number(r.getAttribute('height'))),
        };
      });
      assert.equal(bars.hidden, 'true', 'the waveform is decorative');
      assert.ok(bars.heights.length > 10 && new Set(bars.heights).size > 1, `the waveform has the beeps' shape: ${JSON.stringify(bars.heights)}`);

      const played = await play(heard);
      const src = new URL(played.src);
      assert.equal(src.origin, scene.server.origin, 'played from the origin (the CSP allows no blob: or data: media)');
      assert.match(src.pathname, /^\/media\/[A-Za-z0-9_-]{22,64}$/);
      assert.ok(played.currentTime > 0.3, `it plays (currentTime ${played.currentTime})`);
      assert.ok(played.readyState >= 2, `it has data (readyState ${played.readyState})`);
      assert.ok(Number.isFinite(played.duration) && Math.abs(played.duration - seconds) < 1.5, `the player knows the length (${played.duration} s)`);

      // The service worker answers a range with 206 and the bytes are the recording (WebM: EBML magic).
      const whole = await fetchRange(bob.page, src.pathname, null);
      assert.equal(whole.status, 200);
      assert.match(whole.type ?? '', /^audio\/(webm|ogg)/);
      assert.deepEqual(whole.head, [0x1a, 0x45, 0xdf, 0xa3]);
      const part = await fetchRange(bob.page, src.pathname, 'bytes=100-199');
      assert.equal(part.status, 206);
      assert.equal(part.length, 100);
      assert.equal(part.contentRange, `bytes 100-199/${whole.length}`);
      const tail = await fetchRange(bob.page, src.pathname, 'bytes=-10');
      assert.deepEqual([tail.status, tail.length, tail.contentRange], [206, 10, `bytes ${whole.length - 10}-${whole.length - 1}/${whole.length}`]);
      const past = await fetchRange(bob.page, src.pathname, `bytes=${whole.length}-`);
      assert.equal(past.status, 416);
      assert.equal(bob.forgiveErrors(/HTTP 416 GET \/media\//), 1, 'a range past the end is refused as it should be');

      // The sender's own message plays too, once bob's receipt is in: a row drawn again while it
      // plays would stop it.
      await messageLog(alice.page)
        .getByRole('listitem')
        .filter({ has: alice.page.locator('audio') })
        .first()
        .getByRole('status', { name: 'Read', exact: true })
        .waitFor({ timeout: 30_000 });
      const mine = voiceMessages(alice.page).first();
      assert.ok((await play(mine)).currentTime > 0.3, 'the sender plays their own voice message');

      for (const colorScheme of ['light', 'dark'] as const) {
        await bob.page.emulateMedia({ colorScheme });
        assert.deepEqual(await allViolations(bob.page), [], `a chat with a voice message (${colorScheme})`);
      }
      await bob.page.emulateMedia({ colorScheme: 'light' });

      // Once the message has left the screen, its URL plays nothing.
      await button(bob.page, 'New chat').click();
      await bob.page.waitForFunction(() => document.querySelectorAll('audio').length === 0);
      // The service worker forgets the address once the player is gone; until then it still serves it.
      const revoked = await until('the token to be revoked', async () => {
        const status = (await fetchRange(bob.page, src.pathname, null)).status;
        return status === 404 ? status : undefined;
      });
      assert.equal(revoked, 404, 'the token is revoked');
      assert.equal(bob.forgiveErrors(/HTTP 404 GET \/media\//), 1);
      await openChat(bob.page, aliceNick);
    })();
  });

  test('"Cancel recording" sends nothing and lets go of the microphone', async () => {
    await scene.step(async () => {
      const before = attachmentCount(scene.server.dbPath);
      const { got } = await microphoneTracks(alice.page);
      await record(alice.page, 2);
      assert.equal((await microphoneTracks(alice.page)).live, 1, 'the microphone is on while recording');
      await button(alice.page, 'Cancel recording').click();
      await messageBox(alice.page).waitFor();
      assert.deepEqual(await microphoneTracks(alice.page), { got: got + 1, live: 0 }, 'the microphone is released on cancel');
      const after = scene.text('after the cancelled recording');
      await send(alice.page, after);
      await seeMessage(bob.page, after);
      assert.equal(await voiceMessages(bob.page).count(), 1, 'no second voice message arrived');
      assert.equal(await voiceMessages(alice.page).count(), 1);
      assert.equal(attachmentCount(scene.server.dbPath), before, 'nothing was uploaded');
    })();
  });

  test('a voice message in a room reaches a member and plays', async () => {
    await scene.step(async () => {
      const room = `voice ${aliceNick.slice(-6)}`;
      await createRoom(alice.page, room, [bobNick]);
      await chatEntry(bob.page, room).waitFor({ timeout: 30_000 });
      await openChat(bob.page, room);
      await record(alice.page, 2);
      await button(alice.page, 'Send voice message').click();
      await voiceCount(bob.page, 1);
      const heard = voiceMessages(bob.page).first();
      assert.ok((await shownSeconds(heard)) >= 2);
      assert.ok((await play(heard)).currentTime > 0.3, 'it plays');
      assert.equal((await microphoneTracks(alice.page)).live, 0);
    })();
  });

  test('a page loaded past the service worker (a hard reload) still plays a voice message', async () => {
    await scene.step(async () => {
      // Whether the worker controls the page is noted as the document starts, before any script of
      // the app: the app asks the worker to take the page as soon as it shows a voice message, which
      // on a loaded machine can be before the test gets to look.
      const cdp = await bob.page.context().newCDPSession(bob.page);
      await cdp.send('Page.enable');
      const { identifier } = await cdp.send('Page.addScriptToEvaluateOnNewDocument', {
        source: 'window.__svcControlledAtLoad = navigator.serviceWorker.controller !== null;',
      });
      await Promise.all([bob.page.waitForEvent('load'), cdp.send('Page.reload', { ignoreCache: true })]);
      await cdp.send('Page.removeScriptToEvaluateOnNewDocument', { identifier });
      await cdp.detach();
      const atLoad = await bob.page.evaluate(() => (window as { __svcControlledAtLoad?: boolean }).__svcControlledAtLoad);
      assert.equal(atLoad, false, 'a hard reload bypasses the service worker');
      await chatEntry(bob.page, aliceNick).waitFor({ timeout: 30_000 });
      await openChat(bob.page, aliceNick);
      await voiceCount(bob.page, 1);
      assert.ok((await play(voiceMessages(bob.page).first())).currentTime > 0.3, 'it plays once the worker has taken the page');
      assert.equal(await bob.page.evaluate(() => navigator.serviceWorker.controller !== null), true, 'the worker took the page');
    })();
  });

  test('a refused microphone is said in the composer, and nothing records', async () => {
    await scene.step(async () => {
      // A browser that asks before giving the microphone (the others answer yes by themselves), refused.
      const asking = await launchBrowser(CHROMIUM, { askMicrophone: true });
      const carol = await openDevice(asking, 'carol', scene.server.origin);
      scene.devices.push(carol);
      closeLater.push(() => asking.close());
      await signUp(carol.page, nick('carol'), 'carol password one');
      await startChat(carol.page, aliceNick);
      await button(carol.page, 'Record voice message').click();
      await carol.page.getByRole('status').filter({ hasText: 'The microphone is blocked for this site' }).waitFor();
      assert.equal(await button(carol.page, 'Send voice message').isVisible(), false, 'nothing records');
      await messageBox(carol.page).waitFor();
      assert.deepEqual(await allViolations(carol.page), []);
    })();
  });
  test('a voice message recorded offline waits in the outbox and is sent once, when the network is back', async () => {
    await scene.step(async () => {
      await openChat(alice.page, bobNick);
      await openChat(bob.page, aliceNick);
      await voiceCount(bob.page, 1);
      await alice.context.setOffline(true);
      await record(alice.page, 2);
      // Its upload is tried, and fails, while the network is away.
      const failed = alice.page.waitForEvent('requestfailed', (r) => new URL(r.url()).pathname.startsWith('/api/attachments'));
      await button(alice.page, 'Send voice message').click();
      const mine = messageLog(alice.page)
        .getByRole('listitem')
        .filter({ has: alice.page.locator('audio') })
        .last();
      await mine.getByRole('status', { name: /Sending|Waiting to send/ }).waitFor();
      await failed;
      await alice.context.setOffline(false);
      await mine.getByRole('status', { name: /Sent|Delivered|Read/ }).waitFor({ timeout: 60_000 });
      await voiceCount(bob.page, 2);
      // The outbox sends in order: a second copy would reach bob before the text typed next.
      const next = `typed next ${Date.now()}`;
      await send(alice.page, next);
      await seeMessage(bob.page, next);
      assert.equal(await voiceMessages(bob.page).count(), 2, 'sent once');
      assert.ok((await play(voiceMessages(bob.page).last())).currentTime > 0.3, 'it plays');
      // What failed while offline is the cut itself.
      alice.forgiveErrors(/ERR_INTERNET_DISCONNECTED/);
    })();
  });
});

describe('web client: a voice message at the file limit', { skip: missingBrowser() }, () => {
  let scene: Scene;
  after(async () => {
    await scene?.close();
  });

  test('a recording stops by itself before its file would be over ATTACHMENT_MAX_BYTES, and what was recorded is sent', async () => {
    // 24 KB: at 32 kbit/s about five seconds.
    scene = await openScene({ env: { ATTACHMENT_MAX_BYTES: '24576' } });
    await scene.step(async () => {
      const [dave, erin] = await Promise.all([scene.device('dave'), scene.device('erin')]);
      await allowMicrophone(dave.context, scene.server.origin);
      const [daveNick, erinNick] = [nick('dave'), nick('erin')];
      await Promise.all([signUp(dave.page, daveNick, 'dave password one'), signUp(erin.page, erinNick, 'erin password one')]);
      await startChat(dave.page, erinNick);
      await button(dave.page, 'Record voice message').click();
      await dave.page.getByRole('status').filter({ hasText: 'Stopped at the longest a voice message can be' }).waitFor({ timeout: 20_000 });
      assert.equal((await microphoneTracks(dave.page)).live, 0, 'the microphone is released at the limit');
      const stoppedAt = await dave.page.getByRole('timer').textContent();
      await dave.page.waitForTimeout(1_500);
      assert.equal(await dave.page.getByRole('timer').textContent(), stoppedAt, 'the time stands still');
      await button(dave.page, 'Send voice message').click();
      await chatEntry(erin.page, daveNick).waitFor({ timeout: 30_000 });
      await openChat(erin.page, daveNick);
      await voiceCount(erin.page, 1);
      const seconds = await shownSeconds(voiceMessages(erin.page).first());
      assert.ok(seconds >= 3 && seconds <= 6, `what was recorded is sent (${seconds} s)`);
    })();
  });
});
