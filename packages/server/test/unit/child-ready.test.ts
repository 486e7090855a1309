/**
 * The test harness's child service (testkit/child.ts) is ready only when its own process answers:
 * a port another process took between freePort and the child's bind must not pass for the child,
 * and startChildOnFreePort then tries another port.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@svc/testkit/port';
import { ChildService, startChildOnFreePort } from '@svc/testkit/child';

/** The service's settings on `port`, with its store in `dir`. */
function settings(port: number, dir: string): Record<string, string> {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    ORIGIN: `http://127.0.0.1:${port}`,
    DATABASE_URL: `sqlite:${join(dir, 'svc.db')}`,
    LOG_LEVEL: 'warn',
  };
}

/** Another process's HTTP server on a free port, answering 200 to anything (so to /healthz too). */
async function stranger(): Promise<{ port: number; close: () => Promise<void> }> {
  const port = await freePort();
  const server = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return { port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

test("a child whose port another server holds fails at start with EADDRINUSE, not ready from the other server's /healthz", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-child-ready-'));
  const other = await stranger();
  const child = new ChildService({ env: settings(other.port, dir), timeoutMs: 15_000 });
  try {
    await assert.rejects(child.start(), /exited with 1 at start:[\s\S]*EADDRINUSE/);
    assert.equal(child.state, 'exited with code 1');
  } finally {
    await child.kill();
    await other.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a child listening on every address is ready from its own answer, and its state says how it ended', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-child-ready-'));
  const port = await freePort();
  // On every address: its listening socket is found by the port alone.
  const child = new ChildService({
    env: {
      PORT: String(port),
      HOST: '0.0.0.0',
      ORIGIN: `http://localhost:${port}`,
      DATABASE_URL: `sqlite:${join(dir, 'svc.db')}`,
      LOG_LEVEL: 'warn',
    },
  });
  try {
    await child.start();
    assert.equal(child.state, `running (pid ${child.pid})`);
    await child.kill();
    assert.equal(child.state, 'killed by SIGKILL');
  } finally {
    await child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('startChildOnFreePort takes another free port when the first one was taken before the child could bind it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-child-ready-'));
  const other = await stranger();
  const taken = other.port;
  const asked: number[] = [];
  let child: ChildService | undefined;
  try {
    child = await startChildOnFreePort((port) => {
      // The first attempt gets the port the stranger holds, as if it had taken it meanwhile.
      const p = asked.length === 0 ? taken : port;
      asked.push(p);
      return { env: settings(p, dir) };
    });
    assert.equal(asked.length, 2);
    assert.equal(asked[0], taken);
    assert.equal(child.port, asked[1]);
    assert.notEqual(child.port, taken);
    assert.equal(child.state, `running (pid ${child.pid})`);
  } finally {
    await child?.kill();
    await other.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
