/**
 * This machine as a device of the account, opened from the state file for one command: the
 * SDK's Messenger resumed from the kept session and cookie, its Conversations over the file
 * store, trust on first use with pins kept in the same file, and the pacer's budget carried from
 * the runs before (each command is a new process, and a script may send in a loop).
 */
import {
  ApiClient,
  Conversations,
  cookieFetch,
  KeyPins,
  MemoryFiles,
  metaPins,
  Pacer,
  resumePortable,
  type ChatId,
  type Messenger,
  type PacerSnapshot,
} from '@svc/sdk';
import type { Room } from '@svc/protocol';
import { nodeArgon2 } from './argon2.js';
import { CliError, EXIT } from './errors.js';
import { FileStore } from './file-store.js';
import { password } from './password.js';
import { StateFile, statePath, type Unlock } from './state-file.js';

const PACER_KEY = 'cli|pacer';

export interface Device {
  file: StateFile;
  store: FileStore;
  m: Messenger;
  conv: Conversations;
  pins: KeyPins;
  server: string;
  /** Stops sending, keeps the pacer's budget and the session cookie, writes what waits. */
  close(): Promise<void>;
}

export function unlockFrom(env: NodeJS.ProcessEnv): Unlock {
  const keyFile = env.SVC_KEY_FILE;
  return { ...(keyFile ? { keyFile } : {}), password: () => password(env, 'the state file of svc') };
}

export function apiFor(server: string, origin: string, cookie: string | null): { api: ApiClient; jar: ReturnType<typeof cookieFetch> } {
  const jar = cookieFetch(undefined, cookie);
  return { api: new ApiClient({ baseUrl: server, origin, fetch: jar }), jar };
}

export async function openDevice(env: NodeJS.ProcessEnv, o: { receipts?: boolean } = {}): Promise<Device> {
  const file = await StateFile.open(statePath(env), unlockFrom(env));
  const c = file.content;
  const { api, jar } = apiFor(c.server, c.origin, c.cookie);
  const store = new FileStore(file);
  const pins = new KeyPins(metaPins(store), { nick: c.session.nick, publicKey: c.session.publicKey }, () => api.now());
  const m = await resumePortable({ api, argon2: nodeArgon2, keyCheck: pins.keyCheck }, c.session);
  const pacer = new Pacer(undefined, () => api.now());
  const kept = (await store.getMeta(PACER_KEY)) as PacerSnapshot | undefined;
  if (kept && Array.isArray(kept.sent)) pacer.restore(kept);
  // A file waits in memory for its upload: a send that does not finish leaves the outbox (send.ts).
  const conv = new Conversations({ messenger: m, store, pacer, receipts: o.receipts ?? false, files: new MemoryFiles() });
  const keepPacer = () => store.putMeta(PACER_KEY, pacer.snapshot());
  conv.onSent(keepPacer);
  return {
    file,
    store,
    m,
    conv,
    pins,
    server: c.server,
    async close() {
      conv.stop();
      await keepPacer();
      if (jar.cookie() !== file.content.cookie)
        await file.update((content) => {
          content.cookie = jar.cookie();
        });
    },
  };
}

/** The chat a name stands for: `--room NAME` (a room's name or id), else a nick. */
export async function resolveChat(dev: Device, name: string, room: boolean): Promise<{ chat: ChatId; label: string }> {
  if (!room) return { chat: `dm:${name}`, label: name };
  const rooms: Room[] = await dev.m.syncRooms();
  const byId = rooms.find((r) => r.id === name);
  if (byId) return { chat: `room:${byId.id}`, label: byId.name };
  const named = rooms.filter((r) => r.name === name);
  if (named.length === 1) return { chat: `room:${named[0]!.id}`, label: name };
  if (named.length > 1)
    throw new CliError(`several rooms are named ${name}: give one of their ids (${named.map((r) => r.id).join(', ')})`, EXIT.usage);
  throw new CliError(`no room named ${name} among the rooms of ${dev.m.nick}`, EXIT.usage);
}
