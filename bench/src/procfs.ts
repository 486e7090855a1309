/**
 * What /proc says about the servers under test (child processes started with
 * `@svc/testkit/child`): their CPU time and memory, per process, apart from the load generator's.
 */
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ; 100 on every Linux we run on). */
const CLK_TCK = 100;

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

/** Read- and write-type system calls of a process so far (syscr, syscw of /proc/<pid>/io): socket reads and writes, and SQLite's file I/O. */
export function ioCalls(pid: number): { reads: number; writes: number } {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? NaN);
  return { reads: field('syscr'), writes: field('syscw') };
}
