/**
 * The admin command: `npm run admin -- invite create [--uses N] [--expires DURATION]`.
 * Works on the store DATABASE_URL names, like the service.
 */
import { randomBytes } from 'node:crypto';
import { encodeB64url } from '@svc/protocol';
import { parseConfig, ConfigError } from './config.js';
import { USAGE, parseInviteArgs } from './admin-args.js';
import { SqliteStore } from './store/sqlite/index.js';
import { defaultWebRoot } from './paths.js';

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
