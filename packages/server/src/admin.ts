/**
 * The admin command: `npm run admin -- invite create [--uses N] [--expires DURATION]`, and
 * `npm run admin -- copy-to-postgres [--from sqlite:PATH] --to postgres://…` (see docs/POSTGRES.md).
 * Works on the store DATABASE_URL names, like the service.
 */
import { randomBytes } from 'node:crypto';
import { encodeB64url } from '@svc/protocol';
import { parseConfig, ConfigError } from './config.js';
import { USAGE, parseCopyArgs, parseInviteArgs } from './admin-args.js';
import { copyToPostgres } from './copy.js';
import { openStore } from './backends.js';
import { defaultWebRoot } from './paths.js';

/** `copy-to-postgres`: copies the SQLite database into an empty PostgreSQL one and prints what it copied. */
async function copy(args: string[]): Promise<number> {
  const a = parseCopyArgs(args);
  let from = a.from;
  if (from === null) {
    const config = parseConfig(process.env, { webRoot: defaultWebRoot(), build: { revision: 'dev', commitTime: null } });
    if (config.database.kind !== 'sqlite') throw new ConfigError(`DATABASE_URL is not sqlite:, so --from sqlite:PATH is required\n${USAGE}`);
    from = config.database.path;
  }
  const counts = await copyToPostgres(from, a.to, a.schema !== undefined ? { schema: a.schema } : {});
  for (const [table, n] of Object.entries(counts)) process.stdout.write(`${table}: ${n}\n`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'copy-to-postgres') return copy(argv.slice(1));
  const [group, action, ...rest] = argv;
  if (group !== 'invite' || action !== 'create') {
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const { uses, expiresInMs } = parseInviteArgs(rest);
  const config = parseConfig(process.env, { webRoot: defaultWebRoot(), build: { revision: 'dev', commitTime: null } });
  const store = await openStore(config);
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
