/** Graceful shutdown on SIGTERM: open streams end, the process exits 0, and committed data is kept. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client, Stream, registerBody, type TestServer } from '@svc/testkit/harness';
import { startChildOnFreePort } from '@svc/testkit/child';

test('SIGTERM closes open streams, lets the process exit 0, and keeps what was committed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-stop-'));
  const child = await startChildOnFreePort((port) => ({
    env: { PORT: String(port), ORIGIN: `http://localhost:${port}`, DATABASE_URL: `sqlite:${join(dir, 'svc.db')}`, LOG_LEVEL: 'warn' },
    log: false,
  }));
  const origin = `http://localhost:${child.port}`;
  try {
    const fake = { url: child.url } as TestServer;
    const c = new Client(fake);
    const reg = await c.post('/api/register', registerBody('stopper'), { headers: { origin } });
    assert.equal(reg.status, 201);
    assert.equal((await c.post('/api/devices', { id: 'stop-device-1' }, { headers: { origin } })).status, 201);
    const s = await Stream.open(c, 'stop-device-1');
    assert.ok(await s.ready());

    // stop() sends SIGTERM at once and resolves with the exit code.
    const exited = child.stop();
    assert.ok(await s.closedByServer(5000), 'the stream ended');
    assert.equal(await exited, 0);

    const db = new Database(join(dir, 'svc.db'), { readonly: true });
    assert.deepEqual(db.prepare("SELECT id FROM devices WHERE nick = 'stopper'").all(), [{ id: 'stop-device-1' }]);
    db.close();
  } finally {
    await child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});
