/**
 * Voice messages as a person records and plays them: Chromium's fake microphone (launched with
 * --use-fake-device-for-media-stream) beeps once a second, and its prompt is answered yes. To see
 * whether the app let go of the microphone, each page notes the tracks getUserMedia hands out
 * (the real call, watched, not replaced).
 */
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { button, messageLog } from './ui.js';

const WATCH_TRACKS = () => {
  const md = navigator.mediaDevices as MediaDevices | undefined;
  if (!md) return;
  const real = md.getUserMedia.bind(md);
  const tracks: MediaStreamTrack[] = [];
  (window as { __svcTracks?: MediaStreamTrack[] }).__svcTracks = tracks;
  md.getUserMedia = async (c?: MediaStreamConstraints) => {
    const s = await real(c);
    tracks.push(...s.getTracks());
    return s;
  };
};

/** Lets the device's pages record (the microphone allowed) and notes the tracks they get. */
export async function allowMicrophone(context: BrowserContext, origin: string): Promise<void> {
  await context.grantPermissions(['microphone'], { origin });
  await context.addInitScript(WATCH_TRACKS);
}

/** How many microphone tracks the page got, and how many of them are still live. */
export function microphoneTracks(page: Page): Promise<{ got: number; live: number }> {
  return page.evaluate(() => {
    const t = (window as { __svcTracks?: MediaStreamTrack[] }).__svcTracks ?? [];
    return { got: t.length, live: t.filter((x) => x.readyState === 'live').length };
  });
}

/** Starts recording and waits until the recording shows `seconds` (as m:ss). */
export async function record(page: Page, seconds: number): Promise<void> {
  await button(page, 'Record voice message').click();
  await button(page, 'Send voice message').waitFor();
  await page
    .getByRole('timer')
    .filter({ hasText: `0:${String(seconds).padStart(2, '0')}` })
    .waitFor({ timeout: seconds * 1000 + 10_000 });
}

export function voiceMessages(page: Page): Locator {
  return messageLog(page).locator('audio[aria-label="Voice message"]');
}

/** The duration shown as text (m:ss) beside the player of `audio`, in seconds. */
export async function shownSeconds(audio: Locator): Promise<number> {
  const text = await audio
    .locator('..')
    .getByText(/^\d+:\d{2}$/)
    .first()
    .textContent();
  const m = /^(\d+):(\d{2})$/.exec(text ?? '');
  if (!m) throw new Error(`no duration beside the player: "${text}"`);
  return Number(m[1]) * 60 + Number(m[2]);
}

export interface Played {
  src: string;
  currentTime: number;
  readyState: number;
  duration: number;
}

/**
 * Plays the recording from its start until its time has moved on, and pauses it. A row drawn
 * again meanwhile (a receipt arriving) takes its player out of the page: then the new one plays.
 */
export async function play(audio: Locator): Promise<Played> {
  for (let attempt = 0; ; attempt++) {
    const r = await playOnce(audio);
    if (r.currentTime > 0.3 || r.connected || attempt >= 3) return r;
  }
}

function playOnce(audio: Locator): Promise<Played & { connected: boolean }> {
  return audio.evaluate(async (a: HTMLAudioElement) => {
    const deadline = Date.now() + 20_000;
    while (!a.src && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    a.muted = true;
    // The most data the element had while it played, noted at each of its events: sampled now
    // and then, it may read 1 (no data at the position yet) between two ranges of a stream, or
    // right after a pause.
    let readyState = a.readyState;
    const note = () => (readyState = Math.max(readyState, a.readyState));
    const events = ['loadeddata', 'canplay', 'canplaythrough', 'playing', 'timeupdate'];
    for (const e of events) a.addEventListener(e, note);
    await a.play().catch(() => undefined);
    note();
    while (a.currentTime <= 0.3 && a.isConnected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    note();
    for (const e of events) a.removeEventListener(e, note);
    a.pause();
    return { src: a.src, currentTime: a.currentTime, readyState, duration: a.duration, connected: a.isConnected };
  });
}
