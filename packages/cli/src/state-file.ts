/**
 * The one file that makes this machine a device of the account: the identity key, the session
 * cookie, the pinned keys of contacts, the outbox and the history this device holds. It lives at
 * $XDG_CONFIG_HOME/svc/state.json (~/.config when unset), mode 0600 in a 0700 folder, and is
 * sealed (AES-256-GCM) under a key made either from the account's password (Argon2id with the
 * file's own salt) or from SVC_KEY_FILE, for a service that runs with nobody to type a password.
 * Only the sealing method and its salt are in the clear.
 *
 * Several svc processes may share it (a `listen` under systemd and a `send` from cron): every
 * change is written under a lock file, to a temporary file renamed over the old one, after
 * re-reading what another process wrote meanwhile (update()).
 */
import { constants, promises as fs } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import {
  deriveMaster,
  fromUtf8,
  hkdf,
  importAesKey,
  KDF_DEFAULTS,
  newKdf,
  open,
  seal,
  utf8,
  type Kdf,
  type MemorySnapshot,
  type PortableSession,
} from '@svc/sdk';
import { nodeArgon2 } from './argon2.js';
import { CliError, EXIT } from './errors.js';

const FORMAT = 'svc-cli-state';
const AAD = 'svc/cli-state/v1';
const LOCK_WAIT_MS = 10_000;

/** What the sealed part holds. */
export interface StateContent {
  server: string;
  /** Sent as the Origin header: the service's ORIGIN. */
  origin: string;
  session: PortableSession;
  cookie: string | null;
  store: MemorySnapshot;
}

type Head = { format: typeof FORMAT; v: 1 } & ({ sealedBy: 'password'; kdf: Kdf } | { sealedBy: 'key-file'; salt: string });

interface FileForm {
  head: Head;
  iv: string;
  ct: string;
}

/** How this process opens the file: a key file when SVC_KEY_FILE names one, else the password (asked only when needed). */
export interface Unlock {
  keyFile?: string;
  password: () => Promise<string>;
}

export function statePath(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'svc', 'state.json');
}

async function keyFileBytes(path: string): Promise<Uint8Array> {
  let st;
  try {
    st = await fs.stat(path);
  } catch {
    throw new CliError(`SVC_KEY_FILE: cannot read ${path}`, EXIT.usage);
  }
  // A key that every user of the machine can read protects nothing.
  if ((st.mode & 0o077) !== 0) throw new CliError(`SVC_KEY_FILE: ${path} is readable by others: chmod 600 it`, EXIT.usage);
  const bytes = new Uint8Array(await fs.readFile(path));
  if (bytes.length < 32) throw new CliError('SVC_KEY_FILE must hold at least 32 random bytes (head -c 32 /dev/urandom > FILE)', EXIT.usage);
  return bytes;
}

async function fileKey(head: Head, unlock: Unlock): Promise<CryptoKey> {
  if (head.sealedBy === 'key-file') {
    if (!unlock.keyFile) throw new CliError('this state file is sealed under a key file: set SVC_KEY_FILE', EXIT.usage);
    const ikm = await keyFileBytes(unlock.keyFile);
    return importAesKey(await hkdf(ikm, utf8(head.salt), `${AAD}|key-file`));
  }
  const master = await deriveMaster(await unlock.password(), head.kdf, { argon2: nodeArgon2 });
  try {
    return importAesKey(await hkdf(master, new Uint8Array(0), `${AAD}|password`));
  } finally {
    master.fill(0);
  }
}

function newHead(unlock: Unlock): Head {
  if (unlock.keyFile) return { format: FORMAT, v: 1, sealedBy: 'key-file', salt: newKdf().salt };
  return { format: FORMAT, v: 1, sealedBy: 'password', kdf: newKdf(KDF_DEFAULTS) };
}

function parse(text: string, path: string): FileForm {
  try {
    const f = JSON.parse(text) as FileForm;
    if (f.head?.format === FORMAT && f.head.v === 1 && typeof f.iv === 'string' && typeof f.ct === 'string') return f;
  } catch {
    // reported below
  }
  throw new CliError(`${path} is not a state file of svc (damaged, or of a newer version)`, EXIT.failed);
}

async function readText(path: string): Promise<string | null> {
  try {
    return await fs.readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** Holds `path`.lock while `f` runs; a lock left by a process that is gone is taken over. */
async function locked<T>(path: string, f: () => Promise<T>): Promise<T> {
  const lock = `${path}.lock`;
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const h = await fs.open(lock, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600);
      await h.writeFile(String(process.pid));
      await h.close();
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const holder = Number(await readText(lock).catch(() => null));
      if (holder > 0 && !alive(holder)) await fs.rm(lock, { force: true });
      else if (Date.now() > deadline) throw new CliError(`the state file is locked by process ${holder}`, EXIT.failed);
      else await new Promise((r) => setTimeout(r, 20));
    }
  }
  try {
    return await f();
  } finally {
    await fs.rm(lock, { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class StateFile {
  private constructor(
    readonly path: string,
    private readonly key: CryptoKey,
    private readonly head: Head,
    /** The file's text as this process last read or wrote it: another process's write shows as a difference. */
    private text: string,
    public content: StateContent,
  ) {}

  get sealedBy(): Head['sealedBy'] {
    return this.head.sealedBy;
  }

  static async exists(path: string): Promise<boolean> {
    return (await readText(path)) !== null;
  }

  /** A new state file (signup, login); refused when one exists, so no account is dropped by mistake. */
  static async create(path: string, unlock: Unlock, content: StateContent): Promise<StateFile> {
    await fs.mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const head = newHead(unlock);
    const key = await fileKey(head, unlock);
    const file = new StateFile(path, key, head, '', content);
    await locked(path, async () => {
      if ((await readText(path)) !== null) throw new CliError(`${path} exists already: run svc logout first`, EXIT.usage);
      await file.write();
    });
    return file;
  }

  static async open(path: string, unlock: Unlock): Promise<StateFile> {
    const text = await readText(path);
    if (text === null) throw new CliError('not signed in on this machine: run svc signup or svc login first', EXIT.usage);
    const form = parse(text, path);
    const key = await fileKey(form.head, unlock);
    return new StateFile(path, key, form.head, text, await StateFile.unseal(key, form));
  }

  private static async unseal(key: CryptoKey, form: FileForm): Promise<StateContent> {
    try {
      return JSON.parse(fromUtf8(await open(key, form, AAD))) as StateContent;
    } catch {
      const what = form.head.sealedBy === 'password' ? 'the password does not open' : 'SVC_KEY_FILE does not open';
      throw new CliError(`${what} the state file of svc`, EXIT.auth);
    }
  }

  /**
   * Changes the content under the lock: `f` gets the content as the file holds it now (`reloaded`
   * when another process wrote it since this one last looked) and changes it in place.
   */
  async update(f: (c: StateContent, reloaded: boolean) => void | Promise<void>): Promise<void> {
    await locked(this.path, async () => {
      const text = await readText(this.path);
      if (text === null) throw new CliError('the state file was removed (svc logout?)', EXIT.auth);
      const reloaded = text !== this.text;
      if (reloaded) this.content = await StateFile.unseal(this.key, parse(text, this.path));
      await f(this.content, reloaded);
      await this.write();
    });
  }

  /** Deletes the file (logout). */
  async remove(): Promise<void> {
    await locked(this.path, () => fs.rm(this.path, { force: true }));
  }

  private async write(): Promise<void> {
    const sealed = await seal(this.key, utf8(JSON.stringify(this.content)), AAD);
    const text = JSON.stringify({ head: this.head, ...sealed } satisfies FileForm);
    const tmp = `${this.path}.${process.pid}.tmp`;
    const h = await fs.open(tmp, 'w', 0o600);
    try {
      await h.writeFile(text);
      await h.sync();
    } finally {
      await h.close();
    }
    await fs.rename(tmp, this.path);
    this.text = text;
  }
}
