/**
 * The built service as an operator runs it: `node packages/server/dist/src/main.js` in a child
 * process, configured by its environment alone, ready when it answers (or says it listens), and
 * stopped by its PID. The ops, crash, restart and shutdown tests, the browser suite and the
 * benchmark start it here; the in-process harness (harness.ts) is for everything else.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { get } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, listensOn } from './port.js';

/** The repository root, from packages/testkit/dist. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The built service of this checkout. */
export const SERVICE_MAIN = join(REPO_ROOT, 'packages/server/dist/src/main.js');

/**
 * What a child gets of this process's environment. None of them is a setting of the service, so a
 * REDIS_URL, REGISTRATION or DATABASE_URL of the caller's shell never leaks into one under test;
 * PGUSER and NODE_EXTRA_CA_CERTS are what the in-process harness would see too.
 */
const PASSED = ['HOME', 'USER', 'TMPDIR', 'PGUSER', 'NODE_EXTRA_CA_CERTS'];

export interface ChildServiceOptions {
  /** The service's settings (README "Configuration"); PORT too, unless `ready` is 'listening'. */
  env: Record<string, string>;
  /**
   * How to tell it is up: 'healthz' (the default) polls GET /healthz on env.PORT; 'listening'
   * waits for the log line naming the address, so that the service picks its own port: PORT=0
   * and LOG_LEVEL=info unless `env` says otherwise (it needs `log`).
   */
  ready?: 'healthz' | 'listening';
  /** The arguments of `node`: flags first (`--enable-source-maps`, `--cpu-prof`), then the script. Default: SERVICE_MAIN. */
  args?: string[];
  /**
   * Whether to keep its log (stdout) in `output()` beside stderr (default true). The benchmark and
   * the crash tests leave it out: a parent busy with load that reads it late makes the service's
   * log writes wait.
   */
  log?: boolean;
  /** For error messages (default 'service'). */
  name?: string;
  /** How long a start may take (default 30 s). */
  timeoutMs?: number;
  /** How long stop() waits after SIGTERM before SIGKILL (default 10 s). */
  graceMs?: number;
}

const running = new Set<ChildService>();

/**
 * One service process that can be started again after it stopped or was killed, with the same
 * settings (so on the same port and store). `output()` keeps what every run wrote.
 */
export class ChildService {
  readonly name: string;
  private proc: ChildProcess | null = null;
  private exited: Promise<number | null> = Promise.resolve(null);
  private listenPort: number;
  private readonly env: Record<string, string>;
  private out = '';

  constructor(readonly options: ChildServiceOptions) {
    this.name = options.name ?? 'service';
    this.env = options.ready === 'listening' ? { PORT: '0', LOG_LEVEL: 'info', ...options.env } : options.env;
    this.listenPort = Number(this.env.PORT ?? 0);
    if ((options.ready ?? 'healthz') === 'healthz' && !(this.listenPort > 0)) throw new Error(`${this.name}: readiness by /healthz needs env.PORT`);
    if (options.ready === 'listening' && options.log === false) throw new Error(`${this.name}: readiness by the log line needs the log`);
  }

  get port(): number {
    return this.listenPort;
  }

  /** `http://127.0.0.1:PORT` of the service itself. */
  get url(): string {
    return `http://127.0.0.1:${this.listenPort}`;
  }

  /** The PID of the current (or last) run. */
  get pid(): number {
    if (this.proc?.pid === undefined) throw new Error(`${this.name} was never started`);
    return this.proc.pid;
  }

  /** 'running', or how the current (or last) run ended: for a test's failure message. */
  get state(): string {
    const proc = this.proc;
    if (!proc) return 'never started';
    if (this.alive) return `running (pid ${proc.pid})`;
    return proc.signalCode !== null ? `killed by ${proc.signalCode}` : `exited with code ${proc.exitCode}`;
  }

  /** Everything kept so far: stderr and, with `log`, stdout, in the order it came. */
  output(): string {
    return this.out;
  }

  private get alive(): boolean {
    return this.proc !== null && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Starts the process and resolves once it is ready; a process that is not ready in time is killed. */
  async start(): Promise<void> {
    if (this.alive) throw new Error(`${this.name} is running already`);
    const o = this.options;
    const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    for (const k of PASSED) if (process.env[k] !== undefined) env[k] = process.env[k];
    const proc = spawn(process.execPath, o.args ?? [SERVICE_MAIN], {
      cwd: REPO_ROOT,
      env: { ...env, ...this.env },
      stdio: ['ignore', o.log === false ? 'ignore' : 'pipe', 'pipe'],
    });
    if (proc.pid === undefined) throw new Error(`${this.name}: could not start`);
    this.proc = proc;
    // 'close', not 'exit': by then everything it wrote has been read.
    this.exited = new Promise((r) => proc.once('close', (code) => r(code)));
    proc.once('error', (err) => (this.out += `${String(err)}\n`));
    running.add(this);
    void this.exited.then(() => running.delete(this));
    const keep = (b: Buffer) => (this.out += b.toString());
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    try {
      await this.whenReady(proc, o.ready ?? 'healthz', Date.now() + (o.timeoutMs ?? 30_000));
    } catch (err) {
      await this.kill();
      throw err;
    }
  }

  private async whenReady(proc: ChildProcess, how: 'healthz' | 'listening', deadline: number): Promise<void> {
    const from = this.out.length;
    while (Date.now() < deadline) {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        await this.exited;
        throw new Error(`${this.name} exited with ${proc.exitCode ?? proc.signalCode} at start:\n${this.tail()}`);
      }
      // The answer must come from this child: another process may have taken the port first.
      if (how === 'healthz' && (await healthy(this.listenPort)) && (await listensOn(proc.pid!, this.listenPort))) return;
      if (how === 'listening') {
        const m = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(this.out.slice(from));
        if (m) {
          this.listenPort = Number(m[1]);
          return;
        }
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${this.name} was not ready within ${this.options.timeoutMs ?? 30_000} ms:\n${this.tail()}`);
  }

  /** The end of the output, for an error message. */
  private tail(): string {
    return this.out.slice(-20_000);
  }

  /** SIGTERM, then SIGKILL after `graceMs` (default: the option's); resolves with the exit code (null after a signal). */
  async stop(graceMs = this.options.graceMs ?? 10_000): Promise<number | null> {
    const proc = this.proc;
    if (!proc || !this.alive) return this.exited;
    process.kill(proc.pid!, 'SIGTERM');
    const timer = setTimeout(() => {
      if (proc.exitCode === null && proc.signalCode === null) process.kill(proc.pid!, 'SIGKILL');
    }, graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILL: no shutdown code runs, as in a crash. Resolves once the process is gone. */
  async kill(): Promise<void> {
    if (!this.proc || !this.alive) return;
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  /** Stops the process and starts a fresh one with the same settings. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }
}

/** A ChildService, started. */
export async function startChildService(options: ChildServiceOptions): Promise<ChildService> {
  const s = new ChildService(options);
  await s.start();
  return s;
}

/**
 * A ChildService started on a port from freePort, with the options made for that port. A free
 * port can be taken by another process before the child binds it; the child then exits with
 * EADDRINUSE at start, and another port is tried, `attempts` times in all.
 */
export async function startChildOnFreePort(options: (port: number) => ChildServiceOptions, attempts = 3): Promise<ChildService> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startChildService(options(await freePort()));
    } catch (err) {
      if (attempt >= attempts || !String(err).includes('EADDRINUSE')) throw err;
    }
  }
}

/** Whether GET /healthz answers 200; a fresh connection each time, so no idle one stays open to the service. */
function healthy(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = get({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
  });
}

/** Stops every child still running, each with `graceMs` (on error and on SIGINT). */
export async function stopAll(graceMs = 5_000): Promise<void> {
  await Promise.all([...running].map((c) => c.stop(graceMs).catch(() => undefined)));
}

/** SIGKILL to every child still running, for an exit handler, where nothing can be awaited. */
export function killAllNow(): void {
  for (const c of running) {
    try {
      process.kill(c.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
