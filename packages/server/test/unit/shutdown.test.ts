/** Graceful shutdown on SIGTERM: open streams end, the process exits 0, and committed data is kept. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { freePort } from '@svc/testkit/port';
import { Client, Stream, registerBody, type TestServer } from '@svc/testkit/harness';

test('SIGTERM closes open streams, lets the process exit 0, and keeps what was committed', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-stop-'));
  const port = await freePort();
  const origin = `http://localhost:${port}`;
  const child = spawn(process.execPath, ['packages/server/dist/src/main.js'], {
    env: { ...process.env, PORT: String(port), ORIGIN: origin, DATABASE_URL: `sqlite:${join(dir, 'svc.db')}`, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  try {
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 50; i++) {
      if (
        await fetch(`${url}/healthz`).then(
          (r) => r.ok,
          () => false,
        )
      )
        break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const fake = { url } as TestServer;
    const c = new Client(fake);
    const reg = await c.post('/api/register', registerBody('stopper'), { headers: { origin } });
    assert.equal(reg.status, 201);
    assert.equal((await c.post('/api/devices', { id: 'stop-device-1' }, { headers: { origin } })).status, 201);
    const s = await Stream.open(c, 'stop-device-1');
    assert.ok(await s.ready());

    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    assert.ok(await s.closedByServer(5000), 'the stream ended');
    assert.equal(await exited, 0);

    const db = new Database(join(dir, 'svc.db'), { readonly: true });
    assert.deepEqual(db.prepare("SELECT id FROM devices WHERE nick = 'stopper'").all(), [{ id: 'stop-device-1' }]);
    db.close();
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
