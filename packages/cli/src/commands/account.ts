/**
 * The account on this machine: `signup` creates it and `login` adds this machine as one more
 * device of it (both make the state file), `devices` lists the account's devices, `logout` ends
 * the session, removes this device from the account and deletes the state file.
 */
import { randomBytes } from 'node:crypto';
import { Messenger, portableSession, type MemorySnapshot } from '@svc/sdk';
import { nodeArgon2 } from '../argon2.js';
import { apiFor, openDevice, unlockFrom } from '../device.js';
import { CliError, EXIT, explain } from '../errors.js';
import { password } from '../password.js';
import { StateFile, statePath } from '../state-file.js';
import type { Out } from './out.js';

export interface SignIn {
  server: string;
  origin?: string;
  nick: string;
  invite?: string;
  acceptWeakKdf?: boolean;
}

const EMPTY: MemorySnapshot = { messages: [], pending: [], outbox: [], meta: [] };

function serverUrl(raw: string): { server: string; origin: string } {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new CliError(`--server: not a URL: ${raw}`, EXIT.usage);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new CliError(`--server: not an http(s) URL: ${raw}`, EXIT.usage);
  return { server: u.href.replace(/\/+$/, ''), origin: u.origin };
}

async function signIn(env: NodeJS.ProcessEnv, out: Out, o: SignIn, create: boolean): Promise<void> {
  const { server, origin: fromUrl } = serverUrl(o.server);
  const origin = o.origin ?? fromUrl;
  const path = statePath(env);
  // Checked before the password is asked and before the service hears of it.
  if (await StateFile.exists(path)) throw new CliError(`${path} exists already: run svc logout first`, EXIT.usage);
  const pw = await password(env, `${o.nick} on ${server}`, { confirm: create });
  const { api, jar } = apiFor(server, origin, null);
  const m = new Messenger({ api, argon2: nodeArgon2 });
  try {
    if (create) await m.register({ nick: o.nick, password: pw, ...(o.invite ? { invite: o.invite } : {}) });
    else await m.login({ nick: o.nick, password: pw, ...(o.acceptWeakKdf ? { acceptWeakKdf: true } : {}) });
    const deviceId = `cli-${randomBytes(12).toString('base64url')}`;
    await m.ensureDevice(deviceId);
    const session = await portableSession(m, pw, nodeArgon2);
    const unlock = unlockFrom({ ...env, SVC_PASSWORD: pw });
    const file = await StateFile.create(path, unlock, { server, origin, session, cookie: jar.cookie(), store: EMPTY });
    out.info(`${create ? 'signed up' : 'signed in'} as ${o.nick} on ${server}; this machine is device ${deviceId}`);
    out.info(`state: ${path} (sealed under ${file.sealedBy === 'key-file' ? 'SVC_KEY_FILE' : 'the password'})`);
  } catch (e) {
    throw explain(e, server);
  }
}

export const signup = (env: NodeJS.ProcessEnv, out: Out, o: SignIn) => signIn(env, out, o, true);
export const login = (env: NodeJS.ProcessEnv, out: Out, o: SignIn) => signIn(env, out, o, false);

export async function devices(env: NodeJS.ProcessEnv, out: Out, o: { json: boolean }): Promise<void> {
  const dev = await openDevice(env);
  try {
    const list = await dev.m.api.devices();
    for (const d of list) {
      const here = d.id === dev.m.api.device;
      if (o.json) await out.line(JSON.stringify({ ...d, thisDevice: here }));
      else {
        const seen = d.lastSeenAt ? new Date(d.lastSeenAt).toISOString() : 'never';
        await out.line(`${d.id}  ${d.online ? 'online ' : 'offline'}  last seen ${seen}${here ? '  (this machine)' : ''}`);
      }
    }
  } catch (e) {
    throw explain(e, dev.server);
  } finally {
    await dev.close();
  }
}

export async function logout(env: NodeJS.ProcessEnv, out: Out): Promise<void> {
  const dev = await openDevice(env);
  const id = dev.m.api.device;
  try {
    // A session that ended already needs no ending: what is left is deleting the file.
    const unlessEnded = (e: unknown) => {
      if (explain(e).exit !== EXIT.auth) throw e;
    };
    if (id) await dev.m.api.deleteDevice(id).catch(unlessEnded);
    await dev.m.logout().catch(unlessEnded);
  } catch (e) {
    await dev.close();
    throw explain(e, dev.server);
  }
  dev.conv.stop();
  await dev.file.remove();
  out.info(`signed out; device ${id ?? ''} removed and ${dev.file.path} deleted`);
}
