/**
 * Debian's Chromium driven by playwright-core, headless, with the flags every browser test and
 * the sign-in benchmark launch it with. The microphone is Chromium's fake device (a beep every
 * second) and its permission prompt answers yes by itself, so voice messages can be recorded.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Why a browser suite cannot run here, or undefined. On CI a missing browser is a failure, not a skip. */
export function missingBrowser(): string | undefined {
  if (existsSync(CHROMIUM) || process.env.CI === 'true') return undefined;
  return `${CHROMIUM} is not installed (apt-get install chromium)`;
}

export interface LaunchOptions {
  /**
   * Leave the microphone to the permission settings instead of answering its prompt yes (which
   * would also override a refusal): then headless Chromium refuses it unless a context grants it.
   * For a test of a refused microphone.
   */
  askMicrophone?: boolean;
  /**
   * A Y4M video file Chromium's fake camera plays, in a loop, to any page that asks for the camera
   * (the safety-number scanner). It is opened each time a page starts the camera, so a test may
   * write it after the launch.
   */
  fakeVideo?: string;
}

export function launchBrowser(executablePath = CHROMIUM, o: LaunchOptions = {}): Promise<Browser> {
  return chromium.launch({
    executablePath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--use-fake-device-for-media-stream',
      ...(o.askMicrophone ? [] : ['--use-fake-ui-for-media-stream']),
      ...(o.fakeVideo ? [`--use-file-for-fake-video-capture=${o.fakeVideo}`] : []),
    ],
  });
}
