/**
 * The servers under test run as child processes, so that their CPU time and memory can be read
 * from /proc per process, apart from the load generator's. Every child is stopped by its PID when
 * the benchmark ends, fails or is interrupted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { get } from 'node:http';

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on every Linux we run on). */
const CLK_TCK = 100;

export interface Child {
  name: string;
  pid: number;
  port: number;
  proc: ChildProcess;
  /** How it was started, so that it can be started again the same way. */
  args: string[];
  env: Record<string, string>;
  /** Everything the child wrote to stderr, for the error message when it dies. */
  stderr(): string;
}

const running = new Set<Child>();

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

/** Starts `node <args>` with `env` and waits (at most `timeoutMs`) until GET /healthz answers 200. */
export async function startChild(name: string, args: string[], env: Record<string, string>, port: number, timeoutMs = 30_000): Promise<Child> {
  const proc = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  proc.stderr.setEncoding('utf8');
  proc.stderr.on('data', (c: string) => {
    if (err.length < 20_000) err += c;
  });
  if (proc.pid === undefined) throw new Error(`${name}: could not start`);
  const child: Child = { name, pid: proc.pid, port, proc, args, env, stderr: () => err };
  running.add(child);
  proc.once('exit', () => running.delete(child));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`${name} exited with ${proc.exitCode} at start:\n${err}`);
    if (await healthy(port)) return child;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} did not answer /healthz within ${timeoutMs} ms:\n${err}`);
}

/** Sends SIGTERM, waits up to `graceMs` for the exit (a CPU profile is written then), then SIGKILL. */
export async function stopChild(c: Child, graceMs = 15_000): Promise<void> {
  if (c.proc.exitCode !== null || c.proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => c.proc.once('exit', () => resolve()));
  process.kill(c.pid, 'SIGTERM');
  const timer = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), graceMs).unref());
  if ((await Promise.race([exited, timer])) === 'timeout') {
    process.kill(c.pid, 'SIGKILL');
    await exited;
  }
}

/** Stops the child and starts a fresh process the same way (same port, same store). */
export async function restartChild(c: Child): Promise<Child> {
  await stopChild(c);
  return startChild(c.name, c.args, c.env, c.port);
}

/** Stops every child still running (used on error and on SIGINT). */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((c) => stopChild(c, 5_000).catch(() => undefined)));
}

/** Killing synchronously on exit, when nothing can be awaited any more. */
export function killAllNow(): void {
  for (const c of running) {
    try {
      process.kill(c.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** What /proc/<pid>/stat says about a process: its name, its parent, and its CPU times in ms. */
export interface ProcStat {
  comm: string;
  ppid: number;
  user: number;
  system: number;
  /** User + system time of its children that ended and were waited for (cutime + cstime). */
  children: number;
}

/** Fields 2, 4 and 14 to 17 of /proc/<pid>/stat; throws if the process is gone. */
export function procStat(pid: number): ProcStat {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces; count fields from after its closing parenthesis.
  const close = stat.lastIndexOf(')');
  const rest = stat.slice(close + 2).split(' ');
  const ms = (k: number) => (Number(rest[k]) * 1000) / CLK_TCK;
  return { comm: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(rest[1]), user: ms(11), system: ms(12), children: ms(13) + ms(14) };
}

/** User and system CPU time of a process so far, in ms (fields 14 and 15 of /proc/<pid>/stat). */
export function cpuTimes(pid: number): { user: number; system: number } {
  const s = procStat(pid);
  return { user: s.user, system: s.system };
}

/** Resident set size in bytes (VmRSS of /proc/<pid>/status). */
export function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}
