/** Argument parsing of the admin command, apart from its entry point so it can be tested. */
import { ConfigError } from './config.js';

export const USAGE = `usage: admin invite create [--uses N] [--expires DURATION]
  --uses N            how many registrations the code allows (default 1)
  --expires DURATION  e.g. 30m, 12h, 7d (default: never)
usage: admin invite list          every invite: code, uses left, expiry, state
usage: admin invite revoke CODE   the code registers nobody from now on
usage: admin stats                counts of accounts, devices, rooms, queued envelopes, push subscriptions
usage: admin purge                drop idle sessions and envelopes past retention now (the service also does it every 10 minutes)
usage: admin backup FILE          SQLite only: a consistent copy of the database, also while the service runs
usage: admin copy-to-postgres [--from sqlite:PATH] --to postgres://… [--schema NAME]
  --from sqlite:PATH  the SQLite database to copy (default: DATABASE_URL when it is sqlite:)
  --to URL            an empty PostgreSQL database; its migrations run first
  --schema NAME       put the tables in this schema instead of the default one
Every command but copy-to-postgres works on the store DATABASE_URL names.`;

export type AdminCommand =
  | { cmd: 'invite-create'; uses: number; expiresInMs: number | null }
  | { cmd: 'invite-list' }
  | { cmd: 'invite-revoke'; code: string }
  | { cmd: 'stats' }
  | { cmd: 'purge' }
  | { cmd: 'backup'; dest: string }
  | ({ cmd: 'copy-to-postgres' } & CopyArgs);

function usage(problem: string): ConfigError {
  return new ConfigError(`${problem}\n${USAGE}`);
}

function noMore(args: string[]): void {
  if (args.length > 0) throw usage(`unexpected argument ${args[0]}`);
}

/** The whole command line after `admin` → one command, or a ConfigError carrying the usage. */
export function parseAdminArgs(argv: string[]): AdminCommand {
  const [first, second, ...rest] = argv;
  switch (first) {
    case 'invite':
      if (second === 'create') return { cmd: 'invite-create', ...parseInviteArgs(rest) };
      if (second === 'list') {
        noMore(rest);
        return { cmd: 'invite-list' };
      }
      if (second === 'revoke') {
        const [code, ...more] = rest;
        if (code === undefined || !/^[A-Za-z0-9_-]{1,128}$/.test(code)) throw usage('invite revoke needs the code');
        noMore(more);
        return { cmd: 'invite-revoke', code };
      }
      throw usage(`unknown invite action ${second ?? ''}`);
    case 'stats':
    case 'purge':
      noMore(argv.slice(1));
      return { cmd: first };
    case 'backup': {
      if (second === undefined || second === '' || second.startsWith('-')) throw usage('backup needs the file to write');
      noMore(rest);
      return { cmd: 'backup', dest: second };
    }
    case 'copy-to-postgres':
      return { cmd: 'copy-to-postgres', ...parseCopyArgs(argv.slice(1)) };
    default:
      throw usage(first === undefined ? 'no command given' : `unknown command ${first}`);
  }
}

/** "90s", "30m", "12h", "7d" → milliseconds. */
export function parseDuration(s: string): number | null {
  const m = /^(\d+)([smhd])$/.exec(s);
  if (!m) return null;
  const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd'];
  const n = Number(m[1]) * unit;
  return n > 0 ? n : null;
}

export function parseInviteArgs(args: string[]): { uses: number; expiresInMs: number | null } {
  let uses = 1;
  let expiresInMs: number | null = null;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const v = args[i + 1];
    if (a === '--uses' && v !== undefined && /^\d+$/.test(v) && Number(v) >= 1) {
      uses = Number(v);
      i++;
    } else if (a === '--expires' && v !== undefined && parseDuration(v) !== null) {
      expiresInMs = parseDuration(v);
      i++;
    } else {
      throw new ConfigError(`bad argument ${a ?? ''}\n${USAGE}`);
    }
  }
  return { uses, expiresInMs };
}

export interface CopyArgs {
  /** The SQLite path, or null to take it from DATABASE_URL. */
  from: string | null;
  to: string;
  schema: string | undefined;
}

export function parseCopyArgs(args: string[]): CopyArgs {
  let from: string | null = null;
  let to: string | null = null;
  let schema: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const v = args[i + 1];
    if (a === '--from' && v !== undefined && v.startsWith('sqlite:') && v.length > 'sqlite:'.length) from = v.slice('sqlite:'.length);
    else if (a === '--to' && v !== undefined && /^postgres(ql)?:\/\//.test(v)) to = v;
    else if (a === '--schema' && v !== undefined && /^[a-z_][a-z0-9_]{0,62}$/.test(v)) schema = v;
    else throw new ConfigError(`bad argument ${a ?? ''}\n${USAGE}`);
    i++;
  }
  if (to === null) throw new ConfigError(`--to postgres://… is required\n${USAGE}`);
  return { from, to, schema };
}
