/**
 * The command line: which command, its options, and the one place where a failure becomes a line
 * on standard error and an exit status.
 */
import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { login, logout, devices, signup } from './commands/account.js';
import { chats, history } from './commands/chats.js';
import { listen } from './commands/listen.js';
import { processOut, type Out } from './commands/out.js';
import { send, type Payload } from './commands/send.js';
import { safetyNumber, trust } from './commands/trust.js';
import { CliError, EXIT, explain } from './errors.js';

export const USAGE = `usage: svc COMMAND [options]

  signup --server URL --nick NICK [--invite CODE]   create the account; this machine is its first device
  login --server URL --nick NICK                    add this machine as a device of the account
  send NICK TEXT | send --room NAME TEXT            send a message; TEXT - reads it from standard input
  send NICK --file PATH [TEXT]                      send a file (with --room NAME too); TEXT is its caption
  listen [--json] [--once] [--receipts]             print messages as they arrive
  chats [--json]                                    the chats this device holds
  history CHAT [--limit N] [--json]                 a chat's messages on this device (--room NAME for a room)
  devices [--json]                                  the devices of the account
  safety-number NICK                                the number to compare with NICK
  trust NICK                                        accept the changed key of NICK after comparing
  logout                                            sign out and remove this device and its state

The password comes from SVC_PASSWORD or is asked for; SVC_KEY_FILE seals the state file
under a key file instead of the password. signup and login take --origin ORIGIN where the
service's ORIGIN is not the server URL's, login --accept-weak-kdf for an account whose key
derivation is weaker than the defaults; send takes --timeout SECONDS (300). See docs/BOTS.md.`;

const COMMON = { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;
const SIGN_IN = {
  server: { type: 'string' },
  nick: { type: 'string' },
  origin: { type: 'string' },
  invite: { type: 'string' },
  'accept-weak-kdf': { type: 'boolean' },
} as const;

function args<O extends ParseArgsConfig['options']>(argv: string[], options: O, positionals: [number, number]) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: { ...COMMON, ...options }, allowPositionals: true, strict: true });
  } catch (e) {
    if (/--password\b/.test(String(e)))
      throw new CliError('the password is never given as an argument: set SVC_PASSWORD, or type it when asked', EXIT.usage);
    throw new CliError(`${(e as Error).message.split('\n')[0]!.replace(/\.$/, '')} (svc --help)`, EXIT.usage);
  }
  const n = parsed.positionals.length;
  if (n < positionals[0] || n > positionals[1]) throw new CliError(`wrong number of arguments (svc --help)`, EXIT.usage);
  return parsed;
}

function need(v: string | boolean | undefined, name: string): string {
  if (typeof v !== 'string' || v === '') throw new CliError(`--${name} is needed (svc --help)`, EXIT.usage);
  return v;
}

/** TEXT, or all of standard input for `-` (without its final line breaks). */
function text(arg: string): string {
  const t = arg === '-' ? readFileSync(0, 'utf8').replace(/\n+$/, '') : arg;
  if (t.trim() === '') throw new CliError('nothing to send: the text is empty', EXIT.usage);
  return t;
}

async function dispatch(argv: string[], env: NodeJS.ProcessEnv, out: Out): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'signup':
    case 'login': {
      const { values: v } = args(rest, SIGN_IN, [0, 0]);
      const o = {
        server: need(v.server, 'server'),
        nick: need(v.nick, 'nick'),
        ...(v.origin ? { origin: v.origin } : {}),
        ...(v.invite ? { invite: v.invite } : {}),
        ...(v['accept-weak-kdf'] ? { acceptWeakKdf: true } : {}),
      };
      return command === 'signup' ? signup(env, out, o) : login(env, out, o);
    }
    case 'send': {
      const { values: v, positionals: p } = args(rest, { room: { type: 'string' }, timeout: { type: 'string' }, file: { type: 'string' } }, [0, 2]);
      const room = v.room !== undefined;
      const file = v.file !== undefined ? need(v.file, 'file') : undefined;
      // The text is needed, or with a file it is its caption and may be left out.
      const texts = p.length - (room ? 0 : 1);
      if (texts < (file ? 0 : 1) || texts > 1)
        throw new CliError(room ? 'svc send --room NAME TEXT, or --file PATH [TEXT]' : 'svc send NICK TEXT, or NICK --file PATH [TEXT]', EXIT.usage);
      const timeout = v.timeout === undefined ? 300 : Number(v.timeout);
      if (!(timeout > 0)) throw new CliError('--timeout: seconds, more than 0', EXIT.usage);
      const to = room ? need(v.room, 'room') : p[0]!;
      const payload: Payload = file
        ? { kind: 'file', path: file, ...(texts === 1 ? { caption: text(p.at(-1)!) } : {}) }
        : { kind: 'text', text: text(p.at(-1)!) };
      return send(env, out, { to, room, payload, timeoutMs: timeout * 1000 });
    }
    case 'listen': {
      const { values: v } = args(rest, { once: { type: 'boolean' }, receipts: { type: 'boolean' } }, [0, 0]);
      return listen(env, out, { json: v.json === true, once: v.once === true, receipts: v.receipts === true });
    }
    case 'chats':
      return chats(env, out, { json: args(rest, {}, [0, 0]).values.json === true });
    case 'history': {
      const { values: v, positionals: p } = args(rest, { room: { type: 'string' }, limit: { type: 'string' } }, [0, 1]);
      const limit = v.limit === undefined ? 50 : Number(v.limit);
      if (!Number.isInteger(limit) || limit < 1) throw new CliError('--limit: a whole number, 1 or more', EXIT.usage);
      const room = v.room !== undefined;
      if ((room ? 0 : 1) !== p.length) throw new CliError('svc history NICK, or svc history --room NAME', EXIT.usage);
      return history(env, out, { chat: room ? need(v.room, 'room') : p[0]!, room, limit, json: v.json === true });
    }
    case 'devices':
      return devices(env, out, { json: args(rest, {}, [0, 0]).values.json === true });
    case 'logout':
      args(rest, {}, [0, 0]);
      return logout(env, out);
    case 'trust':
      return trust(env, out, { nick: args(rest, {}, [1, 1]).positionals[0]! });
    case 'safety-number':
      return safetyNumber(env, out, { nick: args(rest, {}, [1, 1]).positionals[0]! });
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      await out.line(USAGE);
      return;
    default:
      throw new CliError(`unknown command: ${command} (svc --help)`, EXIT.usage);
  }
}

/** Runs one command; resolves with the exit status after writing any failure as one line. */
export async function run(argv: string[], env: NodeJS.ProcessEnv = process.env, out: Out = processOut): Promise<number> {
  try {
    if (argv.slice(1).includes('--help') || argv.slice(1).includes('-h')) await out.line(USAGE);
    else await dispatch(argv, env, out);
    return EXIT.ok;
  } catch (e) {
    const err = explain(e);
    process.stderr.write(`svc: ${err.message}\n`);
    return err.exit;
  }
}
