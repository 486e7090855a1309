/** Argument parsing of the admin command, apart from its entry point so it can be tested. */
import { ConfigError } from './config.js';

export const USAGE = `usage: admin invite create [--uses N] [--expires DURATION]
  --uses N            how many registrations the code allows (default 1)
  --expires DURATION  e.g. 30m, 12h, 7d (default: never)
usage: admin copy-to-postgres [--from sqlite:PATH] --to postgres://… [--schema NAME]
  --from sqlite:PATH  the SQLite database to copy (default: DATABASE_URL when it is sqlite:)
  --to URL            an empty PostgreSQL database; its migrations run first
  --schema NAME       put the tables in this schema instead of the default one`;

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
