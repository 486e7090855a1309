/**
 * The CLI's tests run it as an operator's script would: `node packages/cli/dist/src/main.js` in a
 * child process, against the built service in another child process on a fresh SQLite file, each
 * machine a folder of its own for XDG_CONFIG_HOME. The password travels in SVC_PASSWORD only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, startChildOnFreePort, type ChildService } from '@svc/testkit/child';

export const CLI_MAIN = join(REPO_ROOT, 'packages/cli/dist/src/main.js');

export interface Service {
  url: string;
  dbPath: string;
  child: ChildService;
  stop(): Promise<void>;
}

/** The built service on a free port and a fresh SQLite file; `env` adds settings (a lower message limit). */
export async function startService(env: Record<string, string> = {}): Promise<Service> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cli-test-'));
  const dbPath = join(dir, 'svc.db');
  const child = await startChildOnFreePort((port) => ({
    env: {
      PORT: String(port),
      HOST: '127.0.0.1',
      ORIGIN: `http://127.0.0.1:${port}`,
      DATABASE_URL: `sqlite:${dbPath}`,
      LIMIT_MESSAGES_PER_MIN: '100000',
      LIMIT_WRITES_PER_MIN: '100000',
      LIMIT_REGISTER_PER_HOUR: '100000',
      LIMIT_LOGIN_PER_10MIN: '100000',
      LIMIT_LOGIN_PER_IP_PER_10MIN: '100000',
      LIMIT_LOGIN_PER_NICK_PER_10MIN: '100000',
      LOG_LEVEL: 'warn',
      ...env,
    },
  }));
  return {
    url: child.url,
    dbPath,
    child,
    async stop() {
      await child.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One machine: its own config folder, so its own state file. */
export class Machine {
  readonly home: string;
  constructor(
    readonly password: string,
    readonly env: Record<string, string> = {},
  ) {
    this.home = mkdtempSync(join(tmpdir(), 'svc-cli-home-'));
  }

  get statePath(): string {
    return join(this.home, 'svc', 'state.json');
  }

  environment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
    return {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: this.home,
      XDG_CONFIG_HOME: this.home,
      SVC_PASSWORD: this.password,
      ...this.env,
      ...extra,
    };
  }

  /** Runs one command to its end. */
  run(args: string[], o: { input?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<Result> {
    return new Promise((resolve, reject) => {
      const p = spawn(process.execPath, [CLI_MAIN, ...args], { env: this.environment(o.env), stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
      p.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
      const timer = setTimeout(() => p.kill('SIGKILL'), o.timeoutMs ?? 60_000);
      p.on('error', reject);
      p.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
      p.stdin.end(o.input ?? '');
    });
  }

  /** Starts a long-running command (listen) whose output lines the test reads as they come. */
  start(args: string[], o: { env?: Record<string, string> } = {}): Running {
    return new Running(spawn(process.execPath, [CLI_MAIN, ...args], { env: this.environment(o.env), stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  remove(): void {
    rmSync(this.home, { recursive: true, force: true });
  }
}

export interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

export class Running {
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;

  constructor(readonly proc: ChildProcess) {
    proc.stdout!.on('data', (b: Buffer) => (this.stdout += b.toString()));
    proc.stderr!.on('data', (b: Buffer) => (this.stderr += b.toString()));
    this.exited = new Promise((r) => proc.once('close', (code) => r(code)));
  }

  get lines(): string[] {
    return this.stdout.split('\n').filter((l) => l !== '');
  }

  /** Waits until `pred` holds for what the process wrote. */
  async until(pred: (r: Running) => boolean, what: string, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!pred(this)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      if (this.proc.exitCode !== null)
        throw new Error(`exited (${this.proc.exitCode}) before ${what}\nstdout:\n${this.stdout}\nstderr:\n${this.stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<number | null> {
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGTERM');
    return this.exited;
  }
}

let seq = 0;
export function nick(base: string): string {
  seq++;
  return `${base}${process.pid % 10000}_${seq}`;
}

/** A machine signed up as a fresh account; returns it with its nick. */
export async function signedUp(service: Service, base: string, env: Record<string, string> = {}): Promise<Machine & { nick: string }> {
  const m = new Machine(`password of ${base} ${seq}`, env) as Machine & { nick: string };
  m.nick = nick(base);
  const r = await m.run(['signup', '--server', service.url, '--nick', m.nick]);
  if (r.code !== 0) throw new Error(`signup failed: ${r.stderr}`);
  return m;
}
