/**
 * The admin command, `npm run admin -- <command>` (usage in admin-args.ts, README "Operations"):
 * invites (create, list, revoke), stats, purge, backup of a SQLite store, and the copy from
 * SQLite to PostgreSQL (docs/POSTGRES.md). It works on the store DATABASE_URL names, like the
 * service, and may run while the service runs.
 *
 * Exit codes: 0 done, 1 failed, 2 bad arguments or configuration, 3 invite to revoke not found.
 */
import { attachmentTtlMs, parseConfig, ConfigError, type Config } from './config.js';
import { parseAdminArgs, USAGE, type CopyArgs } from './admin-args.js';
import { copyToPostgres } from './store/copy-to-postgres.js';
import { openStore } from './backends.js';
import { defaultWebRoot } from './paths.js';
import type { Store } from './store/types.js';
import * as commands from './ops/admin-commands.js';
import { backupSqlite } from './store/sqlite/backup.js';

function config(): Config {
  return parseConfig(process.env, { webRoot: defaultWebRoot(), build: { revision: 'dev', commitTime: null } });
}

/** `copy-to-postgres`: copies the SQLite database into an empty PostgreSQL one and prints what it copied. */
async function copy(a: CopyArgs): Promise<number> {
  let from = a.from;
  if (from === null) {
    const c = config();
    if (c.database.kind !== 'sqlite') throw new ConfigError(`DATABASE_URL is not sqlite:, so --from sqlite:PATH is required\n${USAGE}`);
    from = c.database.path;
  }
  const counts = await copyToPostgres(from, a.to, a.schema !== undefined ? { schema: a.schema } : {});
  for (const [table, n] of Object.entries(counts)) process.stdout.write(`${table}: ${n}\n`);
  return 0;
}

async function withStore(fn: (store: Store) => Promise<number>): Promise<number> {
  // Never migrates a store in use by an older service: only the service's start upgrades it.
  const store = await openStore(config(), { upgrade: false });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

const print = (text: string): number => {
  process.stdout.write(text);
  return 0;
};

async function main(argv: string[]): Promise<number> {
  const c = parseAdminArgs(argv);
  const now = Date.now();
  switch (c.cmd) {
    case 'copy-to-postgres':
      return copy(c);
    case 'backup': {
      const db = config().database;
      if (db.kind !== 'sqlite') {
        throw new ConfigError('backup copies a SQLite store; back up PostgreSQL with pg_dump (docs/DEPLOY.md, "Backups")');
      }
      const r = await backupSqlite(db.path, c.dest);
      return print(`backup written to ${r.dest} (${r.bytes} bytes, schema version ${r.schemaVersion})\n`);
    }
    case 'invite-create':
      return withStore(async (s) => print(await commands.createInvite(s, c.uses, c.expiresInMs, now)));
    case 'invite-list':
      return withStore(async (s) => print(await commands.listInvites(s, now)));
    case 'invite-revoke':
      return withStore(async (s) => {
        const r = await commands.revokeInvite(s, c.code);
        if (r.found) return print(r.text);
        process.stderr.write(r.text);
        return 3;
      });
    case 'stats':
      return withStore(async (s) => print(await commands.stats(s)));
    case 'purge':
      return withStore(async (s) => print(await commands.purge(s, now, attachmentTtlMs(config()))));
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(err instanceof ConfigError ? 2 : 1);
  },
);
