/**
 * One test file's world: a server on a fresh database, one browser, the devices opened in it and
 * every message text typed, so the file can check at the end that none of them was stored.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '@svc/testkit/browser';
import { openDevice, type Device, type DeviceOptions } from './browser.js';
import { startServer, type RunningServer, type ServerOptions } from './server.js';

export interface Scene {
  server: RunningServer;
  browser: Browser;
  devices: Device[];
  /** Every message text typed so far. */
  typed: string[];
  /** Opens a device (a browser context) for a person; `name` labels its errors. */
  device(name: string, options?: DeviceOptions): Promise<Device>;
  /** A distinctive message text, remembered as typed. */
  text(label: string): string;
  /**
   * Fails with every console error, uncaught exception or CSP violation collected since the last
   * call, and with every error the server logged meanwhile.
   */
  assertNoPageErrors(): void;
  /**
   * A test body that also fails on page errors; when the body itself fails, the page errors of
   * that moment are added to its message, since they usually say why.
   */
  step(body: () => Promise<void>): () => Promise<void>;
  close(): Promise<void>;
}

/** A fresh nick: 2–32 of a-z, 0-9, _. */
export function nick(base: string): string {
  return `${base}_${randomBytes(3).toString('hex')}`;
}

export interface SceneOptions extends ServerOptions {
  /** Every device of the scene runs the app's real KDF parameters (DeviceOptions.realKdf), for the files about the key derivation. */
  realKdf?: boolean;
  /** The browser's camera plays this Y4M file (LaunchOptions.fakeVideo). */
  fakeVideo?: string;
}

export async function openScene(options: SceneOptions = {}): Promise<Scene> {
  const { realKdf, fakeVideo, ...serverOptions } = options;
  const server = await startServer(serverOptions);
  let browser: Browser;
  try {
    browser = await launchBrowser(undefined, fakeVideo ? { fakeVideo } : {});
  } catch (err) {
    await server.stop();
    throw err;
  }
  const scene: Scene = {
    server,
    browser,
    devices: [],
    typed: [],
    async device(name, options) {
      const d = await openDevice(browser, name, server.origin, { ...(realKdf ? { realKdf } : {}), ...options });
      scene.devices.push(d);
      return d;
    },
    text(label) {
      const t = `${label} ${randomBytes(6).toString('hex')}`;
      scene.typed.push(t);
      return t;
    },
    assertNoPageErrors() {
      const errors = scene.devices.flatMap((d) => d.takeErrors());
      const logged = server.takeErrors();
      const warned = server.takeWarnings();
      const context = warned.length > 0 ? `\n\nthe server warned meanwhile:\n${warned.join('\n')}` : '';
      assert.deepEqual(errors, [], `the pages reported errors:\n${errors.join('\n')}${context}`);
      assert.deepEqual(logged, [], `the server logged errors:\n${logged.join('\n')}${context}`);
    },
    step(body) {
      return async () => {
        try {
          await body();
        } catch (err) {
          const errors = [
            ...scene.devices.flatMap((d) => d.takeErrors()),
            ...server.takeErrors().map((l) => `[server] ${l}`),
            ...server.takeWarnings().map((l) => `[server warning] ${l}`),
          ];
          if (!(err instanceof Error)) throw err;
          // A server killed from outside logs nothing: its state is the only trace.
          const state = server.state();
          if (!state.startsWith('running')) err.message += `\n\nthe server is not running: ${state}`;
          if (errors.length > 0) err.message += `\n\npage errors and server errors or warnings meanwhile:\n${errors.join('\n')}`;
          throw err;
        }
        scene.assertNoPageErrors();
      };
    },
    async close() {
      await browser.close().catch(() => undefined);
      await server.stop();
    },
  };
  return scene;
}
