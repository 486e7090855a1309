/**
 * The admin command: `npm run admin -- invite create [--uses N] [--expires DURATION]`.
 * Works on the store DATABASE_URL names, like the service.
 */
import { randomBytes } from 'node:crypto';
import { encodeB64url } from '@svc/protocol';
import { parseConfig, ConfigError } from './config.js';
import { SqliteStore } from './store/sqlite/index.js';
import { defaultWebRoot } from './paths.js';

const USAGE = `usage: admin invite create [--uses N] [--expires DURATION]
  --uses N            how many registrations the code allows (default 1)
  --expires DURATION  e.g. 30m, 12h, 7d (default: never)`;

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

async function main(argv: string[]): Promise<number> {
  const [group, action, ...rest] = argv;
  if (group !== 'invite' || action !== 'create') {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const { uses, expiresInMs } = parseInviteArgs(rest);
  const config = parseConfig(process.env, { webRoot: defaultWebRoot(), build: { revision: 'dev', commitTime: null } });
  if (config.database.kind !== 'sqlite') throw new ConfigError('only sqlite stores are supported by this build');
  const store = SqliteStore.open(config.database.path);
  try {
    const code = encodeB64url(randomBytes(12));
    const now = Date.now();
    await store.createInvite(code, uses, expiresInMs === null ? null : now + expiresInMs, now);
    process.stdout.write(`${code}\n`);
  } finally {
    await store.close();
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(err instanceof ConfigError ? 2 : 1);
  },
);
