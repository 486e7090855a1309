/**
 * The service as a real child process (`node packages/server/dist/src/main.js`), for tests that
 * kill it with SIGKILL and start it again on the same port and database.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { ORIGIN, TEST_RATES, type TestServer } from '@svc/testkit/harness';

export class ChildServer {
  private child: ChildProcess | null = null;
  /** What the process wrote to stderr, for the message of a failing test. */
  stderr = '';
  readonly url: string;

  constructor(
    readonly port: number,
    private readonly env: Record<string, string>,
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  /** What the harness clients need to talk to this process (they send Origin ORIGIN). */
  get server(): TestServer {
    return { url: this.url } as TestServer;
  }

  async start(): Promise<void> {
    // Only what the service needs: a REDIS_URL or other setting of the caller must not leak in.
    const base: Record<string, string> = {};
    for (const k of ['PATH', 'HOME', 'USER', 'PGUSER', 'NODE_EXTRA_CA_CERTS']) if (process.env[k] !== undefined) base[k] = process.env[k]!;
    const child = spawn(process.execPath, ['packages/server/dist/src/main.js'], {
      env: { ...base, ...TEST_RATES, PORT: String(this.port), HOST: '127.0.0.1', ORIGIN, LOG_LEVEL: 'warn', ...this.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr.on('data', (d: Buffer) => {
      this.stderr = (this.stderr + d.toString()).slice(-20_000);
    });
    this.child = child;
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}: ${this.stderr}`);
      if (
        await fetch(`${this.url}/healthz`).then(
          (r) => r.ok,
          () => false,
        )
      )
        return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`server did not start: ${this.stderr}`);
  }

  /** Kills the process with SIGKILL (no shutdown code runs) and waits until it is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGKILL');
    await gone;
    this.child = null;
  }
}
