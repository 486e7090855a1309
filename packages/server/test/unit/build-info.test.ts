/**
 * `GET /api/config` carries the running build's short revision and commit time (docs/API.md):
 * `npm run build` writes them next to the compiled server (scripts/build-info.mjs), the
 * service reads them at start, and a build that has none (not a git checkout) says "dev" and null.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, startChildOnFreePort } from '@svc/testkit/child';
import { readBuildInfo } from '../../src/build-info.js';

test('the build info is read as written, and a missing, malformed or empty one reads as "dev" and null', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-build-info-'));
  try {
    const file = join(dir, 'build-info.json');
    assert.deepEqual(readBuildInfo(file), { revision: 'dev', commitTime: null }, 'missing');
    writeFileSync(file, JSON.stringify({ revision: 'a1b2c3d', commitTime: 1764201600000 }));
    assert.deepEqual(readBuildInfo(file), { revision: 'a1b2c3d', commitTime: 1764201600000 });
    writeFileSync(file, '{ not json');
    assert.deepEqual(readBuildInfo(file), { revision: 'dev', commitTime: null }, 'malformed');
    writeFileSync(file, JSON.stringify({ revision: '', commitTime: 'yesterday' }));
    assert.deepEqual(readBuildInfo(file), { revision: 'dev', commitTime: null }, 'empty or of the wrong type');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the service started from the build serves the build info it was built with in GET /api/config', async () => {
  const file = join(REPO_ROOT, 'packages/server/dist/build-info.json');
  assert.ok(existsSync(file), '`npm run build` wrote the build info');
  const built = JSON.parse(readFileSync(file, 'utf8')) as { revision: string; commitTime: number | null };
  assert.ok(built.revision === 'dev' || /^[0-9a-f]{7,12}$/.test(built.revision), `a short revision: ${built.revision}`);
  const dir = mkdtempSync(join(tmpdir(), 'svc-build-info-run-'));
  const svc = await startChildOnFreePort((port) => ({
    env: { PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: `sqlite:${join(dir, 'svc.db')}`, LOG_LEVEL: 'warn' },
    log: false,
  }));
  try {
    const config = (await (await fetch(`${svc.url}/api/config`)).json()) as { revision: string; commitTime: number | null };
    assert.equal(config.revision, built.revision);
    assert.equal(config.commitTime, built.commitTime);
  } finally {
    await svc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
