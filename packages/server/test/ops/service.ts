/**
 * The built service as an operator runs it: `node packages/server/dist/src/main.js` in a child
 * process, configured by environment only, stopped with SIGTERM by its PID. Also the admin
 * command as a child process that does not block the test's event loop, so that a server in
 * this process or a writer loop keeps running while it works.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export const MAIN = 'packages/server/dist/src/main.js';
export const ADMIN = 'packages/server/dist/src/admin.js';

/**
 * Only what the test gives, plus PATH: variables of the caller's shell (REDIS_URL, REGISTRATION…)
 * must not leak into a service under test.
 */
function childEnv(env: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env };
}

export interface ServiceProcess {
  /** `http://127.0.0.1:PORT` of the service itself. */
  url: string;
  port: number;
  pid: number;
  output(): string;
  /** SIGTERM, then waits for the exit (SIGKILL after 10 s); resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Starts the service with PORT=0 and resolves once it logs the address it listens on (LOG_LEVEL info or lower). */
export async function startService(env: Record<string, string>): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [MAIN], { env: childEnv({ PORT: '0', LOG_LEVEL: 'info', ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${out}`)), 15_000);
    const onData = (b: Buffer) => {
      out += b.toString();
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`service exited with ${code} before listening:\n${out}`));
    });
  });
  return {
    url,
    port: Number(new URL(url).port),
    pid: child.pid!,
    output: () => out,
    stop: () => stopChild(child, exited),
  };
}

async function stopChild(child: ChildProcess, exited: Promise<number | null>): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return exited;
  process.kill(child.pid!, 'SIGTERM');
  const timer = setTimeout(() => {
    if (child.exitCode === null) process.kill(child.pid!, 'SIGKILL');
  }, 10_000);
  const code = await exited;
  clearTimeout(timer);
  return code;
}

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a node script to its end without blocking this process (unlike spawnSync). */
export function runNode(args: string[], env: Record<string, string>, timeoutMs = 20_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => {
      process.kill(child.pid!, 'SIGKILL');
      reject(new Error(`${args.join(' ')} ran over ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** The admin command, as `npm run admin -- …` runs it. */
export const admin = (args: string[], env: Record<string, string>): Promise<Run> => runNode([ADMIN, ...args], env);
