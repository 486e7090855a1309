/**
 * The real built server as a child process, on a free loopback port and a fresh SQLite file, the
 * way an operator runs it. The browser talks to it over its one ORIGIN (127.0.0.1, never localhost,
 * or the origin check refuses the app's requests).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@svc/testkit/port';

/** The repository root, from packages/web/dist/test/harness. */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../..');

export interface RunningServer {
  origin: string;
  dir: string;
  dbPath: string;
  /** Everything the server wrote to stdout and stderr so far (LOG_LEVEL=warn keeps it short). */
  output(): string;
  /** Log lines at level error or above written since the last call (a 500's cause, a crash). */
  takeErrors(): string[];
  stop(): Promise<void>;
}

async function waitHealthy(origin: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}:\n${output()}`);
    try {
      const res = await fetch(`${origin}/healthz`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server did not answer /healthz within 30 s:\n${output()}`);
}

export interface ServerOptions {
  /**
   * Keep the service's own default message limit (30 per nick per minute) instead of raising it,
   * for the scenarios about how the client spends that budget.
   */
  defaultMessageLimit?: boolean;
  /** Other settings of the service, over the harness's own. */
  env?: Record<string, string>;
}

/**
 * Every browser context comes from 127.0.0.1, so the per-IP and per-nick limits are raised far
 * above what the scenarios need; the limits themselves are the server suite's business. A file
 * that checks how the client lives with a limit passes `defaultMessageLimit`, or any setting in `env`.
 */
export async function startServer(o: ServerOptions = {}): Promise<RunningServer> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const dir = mkdtempSync(join(tmpdir(), 'svc-web-test-'));
  const dbPath = join(dir, 'svc.db');
  const child = spawn(process.execPath, ['--enable-source-maps', join(repoRoot, 'packages/server/dist/src/main.js')], {
    cwd: repoRoot,
    // Only what the suite decides: a REDIS_URL, REGISTRATION or DATABASE_URL of the caller's shell must not leak in.
    env: {
      PATH: process.env.PATH ?? '',
      ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}),
      PORT: String(port),
      HOST: '127.0.0.1',
      ORIGIN: origin,
      DATABASE_URL: `sqlite:${dbPath}`,
      ...(o.defaultMessageLimit ? {} : { LIMIT_MESSAGES_PER_MIN: '100000' }),
      LIMIT_WRITES_PER_MIN: '100000',
      LIMIT_REGISTER_PER_HOUR: '100000',
      LIMIT_LOGIN_PER_10MIN: '100000',
      LIMIT_LOGIN_PER_IP_PER_10MIN: '100000',
      LOG_LEVEL: 'warn',
      ...o.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const output = () => out;
  let seen = 0;
  const takeErrors = () => {
    const end = out.lastIndexOf('\n') + 1;
    const lines = out
      .slice(seen, end)
      .split('\n')
      .filter((l) => l.trim());
    seen = end;
    return lines.filter((l) => {
      try {
        return ((JSON.parse(l) as { level?: number }).level ?? 0) >= 50;
      } catch {
        return true; // not a log line: a crash or a stack trace
      }
    });
  };
  const exited = new Promise<void>((r) => child.once('exit', () => r()));

  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      process.kill(child.pid, 'SIGTERM');
      const killer = setTimeout(() => child.pid !== undefined && child.exitCode === null && process.kill(child.pid, 'SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await waitHealthy(origin, child, output);
  } catch (err) {
    await stop();
    throw err;
  }
  return { origin, dir, dbPath, output, takeErrors, stop };
}
