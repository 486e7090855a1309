/** The admin command creates invite codes that registration in invite mode accepts. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { parseAdminArgs, parseDuration } from '../../src/admin-args.js';
import { ConfigError } from '../../src/config.js';

function admin(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, ['packages/server/dist/src/admin.js', ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 10_000,
  });
}

test('invite create prints a code stored with its uses and expiry', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-admin-'));
  try {
    const env = { DATABASE_URL: `sqlite:${join(dir, 'svc.db')}` };
    const r = admin(['invite', 'create', '--uses', '3', '--expires', '2d'], env);
    assert.equal(r.status, 0, r.stderr);
    const code = r.stdout.trim();
    assert.match(code, /^[A-Za-z0-9_-]{16}$/);
    const db = new Database(join(dir, 'svc.db'), { readonly: true });
    const row = db.prepare('SELECT uses_left, expires_at, created_at FROM invites WHERE code = ?').get(code) as {
      uses_left: number;
      expires_at: number;
      created_at: number;
    };
    db.close();
    assert.equal(row.uses_left, 3);
    assert.equal(row.expires_at - row.created_at, 2 * 86_400_000);
    const plain = admin(['invite', 'create'], env);
    assert.equal(plain.status, 0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('bad arguments give usage and a non-zero exit', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-admin-'));
  try {
    const env = { DATABASE_URL: `sqlite:${join(dir, 'svc.db')}` };
    for (const args of [
      [],
      ['invite'],
      ['invite', 'create', '--uses', '0'],
      ['invite', 'create', '--expires', 'soon'],
      ['stats', 'x'],
      ['backup'],
      ['nope'],
    ]) {
      const r = admin(args, env);
      assert.notEqual(r.status, 0, args.join(' '));
      assert.match(r.stderr, /usage/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('durations are whole numbers of s, m, h or d', () => {
  assert.equal(parseDuration('90s'), 90_000);
  assert.equal(parseDuration('30m'), 1_800_000);
  assert.equal(parseDuration('12h'), 43_200_000);
  assert.equal(parseDuration('7d'), 604_800_000);
  for (const bad of ['0d', '1w', 'd', '1.5h', '']) assert.equal(parseDuration(bad), null, bad);
});

test('every command of the usage parses, and stray arguments are refused', () => {
  assert.deepEqual(parseAdminArgs(['invite', 'create', '--uses', '5', '--expires', '7d']), {
    cmd: 'invite-create',
    uses: 5,
    expiresInMs: 7 * 86_400_000,
  });
  assert.deepEqual(parseAdminArgs(['invite', 'list']), { cmd: 'invite-list' });
  assert.deepEqual(parseAdminArgs(['invite', 'revoke', 'K1NzX_4SnNcvs8qe']), { cmd: 'invite-revoke', code: 'K1NzX_4SnNcvs8qe' });
  assert.deepEqual(parseAdminArgs(['stats']), { cmd: 'stats' });
  assert.deepEqual(parseAdminArgs(['purge']), { cmd: 'purge' });
  assert.deepEqual(parseAdminArgs(['backup', '/var/backups/svc.db']), { cmd: 'backup', dest: '/var/backups/svc.db' });
  assert.deepEqual(parseAdminArgs(['copy-to-postgres', '--to', 'postgres://db/svc']), {
    cmd: 'copy-to-postgres',
    from: null,
    to: 'postgres://db/svc',
    schema: undefined,
  });
  for (const bad of [
    ['invite', 'list', 'x'],
    ['invite', 'revoke'],
    ['invite', 'revoke', 'a b'],
    ['purge', '--now'],
    ['backup', '--to', 'x'],
    ['backup', 'a', 'b'],
  ]) {
    assert.throws(() => parseAdminArgs(bad), ConfigError, bad.join(' '));
  }
});
