/**
 * "Scan code" in the safety-number panel, with Chromium's fake camera playing a Y4M file that
 * shows a QR code: the other side's code says "Safety numbers match" and offers "Mark as
 * verified"; a code of other digits says "Safety numbers do not match"; a camera the site may not
 * use says so, and the scanner closes. The video file is written before each scan, since the
 * fake camera opens it each time a page starts the camera.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { create } from 'qrcode';
import { seriousViolations } from './harness/axe.js';
import { missingBrowser, type Device } from './harness/browser.js';
import { nick, openScene, type Scene } from './harness/scene.js';
import { button, openChat, send, signUp, startChat } from './harness/ui.js';

const DIGITS = /\b(\d{5} ){11}\d{5}\b/;
const [WIDTH, HEIGHT] = [640, 480];

/**
 * Two frames of a 640 × 480 4:2:0 Y4M video showing the QR code of `text` (black on white, a
 * quiet zone of four modules), as a phone held up to the camera would.
 */
function qrVideo(text: string): Buffer {
  const qr = create(text, { errorCorrectionLevel: 'M' });
  const size = qr.modules.size;
  const scale = Math.floor(Math.min(WIDTH, HEIGHT) / (size + 8));
  const [x0, y0] = [Math.floor((WIDTH - size * scale) / 2), Math.floor((HEIGHT - size * scale) / 2)];
  const luma = Buffer.alloc(WIDTH * HEIGHT, 235);
  for (let r = 0; r < size; r++)
    for (let c = 0; c < size; c++)
      if (qr.modules.get(r, c))
        for (let y = 0; y < scale; y++)
          luma.fill(16, (y0 + r * scale + y) * WIDTH + x0 + c * scale, (y0 + r * scale + y) * WIDTH + x0 + (c + 1) * scale);
  const chroma = Buffer.alloc((WIDTH / 2) * (HEIGHT / 2) * 2, 128);
  const frame = Buffer.concat([Buffer.from('FRAME\n'), luma, chroma]);
  return Buffer.concat([Buffer.from(`YUV4MPEG2 W${WIDTH} H${HEIGHT} F10:1 Ip A1:1 C420jpeg\n`), frame, frame]);
}

async function safetyDigits(page: Page): Promise<string> {
  const panel = page.getByRole('region', { name: 'Safety number' });
  await panel.getByText(DIGITS).waitFor();
  return DIGITS.exec(await panel.innerText())![0];
}

function panel(page: Page) {
  return page.getByRole('region', { name: 'Safety number' });
}

describe('web client: scanning a safety number', { skip: missingBrowser() }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-scan-'));
  const video = join(dir, 'camera.y4m');
  // A code to start with; each test writes the one its camera should see.
  writeFileSync(video, qrVideo('0'.repeat(60)));
  let scene: Scene;
  let alice: Device;
  let bob: Device;
  const names = { alice: nick('alice'), bob: nick('bob') };
  const password = 'scanning password one';

  before(async () => {
    scene = await openScene({ fakeVideo: video });
    [alice, bob] = await Promise.all([scene.device('alice'), scene.device('bob')]);
    await Promise.all([signUp(alice.page, names.alice, password), signUp(bob.page, names.bob, password)]);
    await startChat(alice.page, names.bob);
    await send(alice.page, scene.text('hello before scanning'));
    await openChat(bob.page, names.alice);
  });
  after(async () => {
    await scene?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('scanning the other side’s code says "Safety numbers match" and offers "Mark as verified"', async () => {
    await scene.step(async () => {
      await button(bob.page, 'Safety number').click();
      const bobsCode = (await safetyDigits(bob.page)).replace(/\s+/g, '');
      writeFileSync(video, qrVideo(bobsCode));

      await button(alice.page, 'Safety number').click();
      await safetyDigits(alice.page);
      await button(alice.page, 'Scan code').click();
      await panel(alice.page).getByRole('status').filter({ hasText: 'Safety numbers match' }).waitFor();
      assert.equal(await alice.page.getByRole('dialog', { name: 'Scan safety number code' }).count(), 0, 'the scanner closed');
      assert.ok(await alice.page.evaluate(() => !document.querySelector('video')), 'the camera preview is gone (its tracks are stopped with it)');
      assert.deepEqual(await seriousViolations(alice.page), [], 'safety panel with a scan result');
      await button(alice.page, 'Mark as verified').click();
      await button(alice.page, 'Mark as not verified').waitFor();
      assert.match(await panel(alice.page).innerText(), /You have verified/);
    })();
  });

  test('a code of other digits says "Safety numbers do not match"', async () => {
    await scene.step(async () => {
      const shown = (await safetyDigits(alice.page)).replace(/\s+/g, '');
      const other = shown.replace(/^./, (d) => String((Number(d) + 1) % 10));
      writeFileSync(video, qrVideo(other));
      await button(alice.page, 'Scan code').click();
      await panel(alice.page).getByRole('status').filter({ hasText: 'Safety numbers do not match' }).waitFor();
      assert.doesNotMatch(await panel(alice.page).innerText(), /Safety numbers match/);
    })();
  });

  test('"Cancel" closes the scanner and stops the camera; a refused camera says so', async () => {
    await scene.step(async () => {
      writeFileSync(video, qrVideo('https://example.com/not-a-safety-number'));
      await button(alice.page, 'Scan code').click();
      const dialog = alice.page.getByRole('dialog', { name: 'Scan safety number code' });
      await dialog.getByText('That code is not a safety number').waitFor();
      await dialog.getByRole('button', { name: 'Cancel' }).click();
      await dialog.waitFor({ state: 'detached' });
      // The dialog leaves the page, and its camera preview with it, once its close event ran.
      await alice.page.waitForFunction(() => document.querySelectorAll('video').length === 0);

      // The person says no to the camera prompt: the browser's getUserMedia rejects as it then does.
      await alice.page.evaluate(() => {
        navigator.mediaDevices.getUserMedia = () => Promise.reject(new DOMException('Permission denied', 'NotAllowedError'));
      });
      await button(alice.page, 'Scan code').click();
      await panel(alice.page).getByText('Camera access was refused').waitFor();
      assert.equal(await dialog.count(), 0, 'the scanner closed');
    })();
  });
});
