/**
 * Trust on first use, as in the web client: `svc safety-number NICK` shows the number to compare
 * with NICK out of band (for the key the service serves now, also when it changed), and
 * `svc trust NICK` accepts a changed key once that number matched.
 */
import { isSdkError } from '@svc/sdk';
import { openDevice } from '../device.js';
import { CliError, EXIT, explain } from '../errors.js';
import type { Out } from './out.js';

export async function safetyNumber(env: NodeJS.ProcessEnv, out: Out, o: { nick: string }): Promise<void> {
  const dev = await openDevice(env);
  try {
    const digits = await dev.m.safetyNumber(o.nick);
    await out.line(digits);
    const pin = await dev.pins.status(o.nick);
    if (pin?.changedTo)
      out.info(
        `the key of ${o.nick} changed since it was first seen; this number is for the new key. If ${o.nick} reads the same digits, run: svc trust ${o.nick}`,
      );
  } catch (e) {
    throw isSdkError(e, 'unknown_user') ? new CliError(`no such user: ${o.nick}`, EXIT.failed) : explain(e, dev.server);
  } finally {
    await dev.close();
  }
}

export async function trust(env: NodeJS.ProcessEnv, out: Out, o: { nick: string }): Promise<void> {
  const dev = await openDevice(env);
  try {
    // The key accepted is the one the last look saw (the safety number was made from it), never one fetched now.
    const accepted = await dev.pins.accept(o.nick);
    if (!accepted) throw new CliError(`no key change of ${o.nick} is waiting (svc safety-number ${o.nick} checks the key)`, EXIT.failed);
    out.info(`the new key of ${o.nick} is trusted; messages to ${o.nick} go again`);
  } finally {
    await dev.close();
  }
}
