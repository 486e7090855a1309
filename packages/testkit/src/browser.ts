/**
 * Debian's Chromium driven by playwright-core, headless, with the flags every browser test and
 * the sign-in benchmark launch it with.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Why a browser suite cannot run here, or undefined. On CI a missing browser is a failure, not a skip. */
export function missingBrowser(): string | undefined {
  if (existsSync(CHROMIUM) || process.env.CI === 'true') return undefined;
  return `${CHROMIUM} is not installed (apt-get install chromium)`;
}

export function launchBrowser(executablePath = CHROMIUM): Promise<Browser> {
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
    ],
  });
}
