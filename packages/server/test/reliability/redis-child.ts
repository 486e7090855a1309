/**
 * A private Redis server (`redis-server` child on a free port, no persistence) that a test may
 * stop and start again. Not `@svc/testkit/child`: that one runs node scripts that answer
 * /healthz, and this is another program, ready when it answers PING.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { freePort } from '@svc/testkit/port';

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.setTimeout(500);
    s.on('connect', () => s.write('PING\r\n'));
    s.on('data', (d) => {
      resolve(d.toString().startsWith('+PONG'));
      s.destroy();
    });
    s.on('error', () => resolve(false));
    s.on('timeout', () => {
      resolve(false);
      s.destroy();
    });
  });
}

/** A SUBSCRIBE command as a client writes it (RESP), for a proxy that holds it. */
export const SUBSCRIBE = /\$9\r\nsubscribe\r\n/i;

export class RedisChild {
  private child: ChildProcess | null = null;
  port = 0;

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    this.child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      if (await answersPing(this.port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('redis-server did not start');
  }

  /** Kills the server at once (its data, held in memory only, is gone). */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise<void>((r) => child.once('exit', () => r()));
    child.kill('SIGKILL');
    await gone;
    this.child = null;
  }
}
