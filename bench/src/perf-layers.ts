/**
 * Where a server's main thread spends a phase, by layer, from Linux `perf` samples (`--perf`).
 *
 * V8's profiler (`--profile`) sees JavaScript only, and counts a thread that the kernel has taken
 * off its core as busy where it stood. `perf record` samples the thread only while it runs on a
 * core, in the kernel as well as in JavaScript (named through `--perf-basic-prof`), in Node's
 * C++, in libuv and in SQLite. Each sample is put in one layer by what its stack holds, first
 * match wins:
 *
 * - socket writes: anything under Node's stream write (`Socket._writev` and the like, or, where
 *   the compiler inlined those, `node::StreamBase`'s writes, libuv's and the kernel's socket
 *   send): the answers and the SSE frames, the kernel's TCP work on loopback included, which the
 *   ceiling pays too; on PostgreSQL, also the statements and commands sent to it and to Redis;
 * - SQLite: anything in `better_sqlite3.node` (the engine and its binding);
 * - drivers: the PostgreSQL and Redis clients' JavaScript (`pg`, `ioredis` and their parsers),
 *   building statements and commands and reading their answers;
 * - garbage collection: V8's collectors;
 * - our code: a JavaScript frame of the server's or the protocol's package (of `ceiling.js` for
 *   the ceiling), with whatever it calls that is not above;
 * - framework: a frame of Fastify or its router, with what it calls;
 * - Node and the kernel: the rest (the event loop, reading sockets, the HTTP parser, streams).
 *
 * The main thread (its tid is the process's pid) is shown by layer; the other threads (V8's
 * helpers, libuv's pool syncing the WAL, SQLite's checkpoint worker) as one sum.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';

export const LAYERS = ['socket writes', 'SQLite', 'drivers', 'garbage collection', 'our code', 'framework', 'Node and the kernel'] as const;
export type Layer = (typeof LAYERS)[number];

/** Sampling frequency: a sample stands for about a millisecond of CPU. */
export const PERF_HZ = 999;

export interface Frame {
  sym: string;
  dso: string;
}

/** What stands for "our code" in a stack: the service's packages, or the ceiling's one file. */
export type Ours = 'service' | 'ceiling';

const OURS: Record<Ours, RegExp> = {
  service: /\/packages\/(server|protocol)\/dist\//,
  ceiling: /\/bench\/dist\/ceiling\.js/,
};
// Node's stream writes in JavaScript; where the compiler inlined those, its C++ and libuv's; and
// the kernel's socket send, which write(2), writev(2) and sendmsg(2) all pass through.
const WRITES =
  /^JS:.*\b(Socket\._writev|Socket\._writeGeneric|writevGeneric)\b|node::StreamBase::.*Write|^uv_try_write$|^uv__write$|^(sock_write_iter|sock_sendmsg|tcp_sendmsg|tcp_sendmsg_locked)$/;
const GC =
  /^v8::internal::(Scavenger|ScavengerCollector|MarkCompactCollector|Heap::CollectGarbage|MinorMarkCompact|ConcurrentMarking|IncrementalMarking)/;
const FRAMEWORK = /\/node_modules\/(fastify|find-my-way|@fastify\/|avvio|light-my-request)/;
const DRIVERS = /\/node_modules\/(pg|pg-protocol|pg-pool|pg-types|pg-connection-string|ioredis|redis-parser|denque|cluster-key-slot)\//;

/** The layer of one sample's stack (leaf first). */
export function layerOf(frames: readonly Frame[], ours: Ours): Layer {
  const mine = OURS[ours];
  let sqlite = false;
  let driver = false;
  let gc = false;
  let code = false;
  let framework = false;
  for (const f of frames) {
    if (WRITES.test(f.sym)) return 'socket writes';
    if (f.dso.endsWith('better_sqlite3.node')) sqlite = true;
    else if (GC.test(f.sym)) gc = true;
    else if (f.sym.startsWith('JS:')) {
      if (DRIVERS.test(f.sym)) driver = true;
      else if (mine.test(f.sym)) code = true;
      else if (FRAMEWORK.test(f.sym)) framework = true;
    }
  }
  if (sqlite) return 'SQLite';
  if (driver) return 'drivers';
  if (gc) return 'garbage collection';
  if (code) return 'our code';
  if (framework) return 'framework';
  return 'Node and the kernel';
}

export interface Sample {
  tid: number;
  /** CLOCK_MONOTONIC, in ms (perf record -k mono; the same clock as process.hrtime). */
  ms: number;
  frames: Frame[];
}

/** Parses `perf script -F tid,time,ip,sym,dso` output, one sample at a time. */
export async function* readSamples(lines: AsyncIterable<string>): AsyncGenerator<Sample> {
  let cur: Sample | null = null;
  for await (const line of lines) {
    if (line.trim() === '') {
      if (cur) yield cur;
      cur = null;
      continue;
    }
    // A frame line starts with a tab; a sample's first line with its tid, which perf pads with
    // spaces: "  19262  1028.088985: " (tid and time).
    if (!line.startsWith('\t')) {
      const m = /^\s*(\d+)\s+(\d+\.\d+):\s*$/.exec(line);
      cur = m ? { tid: Number(m[1]), ms: Number(m[2]) * 1000, frames: [] } : null;
      continue;
    }
    const m = /^\s*[0-9a-f]+ (.*) \((.*)\)$/.exec(line);
    if (cur && m) cur.frames.push({ sym: m[1]!, dso: m[2]! });
  }
  if (cur) yield cur;
}

/** A phase's window on the monotonic clock (ms), and what it carried. */
export interface Window {
  label: string;
  fromMs: number;
  toMs: number;
  /** Messages sent in it: the table's unit. */
  messages: number;
}

export interface WindowLayers {
  label: string;
  messages: number;
  /** Main-thread samples in the window, and the share of the window's time they cover. */
  mainSamples: number;
  mainBusy: number;
  /** µs of main-thread CPU per message, per layer; the kernel's own share of all of them. */
  perMessageUs: Record<Layer, number>;
  kernelShare: number;
  /** µs per message of every other thread of the process. */
  otherThreadsUs: number;
}

/** The kernel and its modules show as `[kernel.kallsyms]`, `[virtio_net]`…; `[vdso]` is user space. */
function inKernel(f: Frame | undefined): boolean {
  return f !== undefined && f.dso.startsWith('[') && f.dso !== '[vdso]' && f.dso !== '[unknown]';
}

/**
 * Sorts samples into the windows and layers. `pid` is the process's (and its main thread's) id.
 * Windows with one label (the same phase of each repetition) are summed into one result.
 */
export async function layersByWindow(samples: AsyncIterable<Sample>, pid: number, windows: readonly Window[], ours: Ours): Promise<WindowLayers[]> {
  const labels = [...new Set(windows.map((w) => w.label))];
  const acc = labels.map(() => ({ main: 0, other: 0, kernel: 0, layers: Object.fromEntries(LAYERS.map((l) => [l, 0])) as Record<Layer, number> }));
  for await (const s of samples) {
    const w = windows.find((x) => s.ms >= x.fromMs && s.ms < x.toMs);
    if (!w) continue;
    const a = acc[labels.indexOf(w.label)]!;
    if (s.tid !== pid) {
      a.other++;
      continue;
    }
    a.main++;
    if (inKernel(s.frames[0])) a.kernel++;
    a.layers[layerOf(s.frames, ours)]++;
  }
  const usPerSample = 1e6 / PERF_HZ;
  return labels.map((label, i) => {
    const a = acc[i]!;
    const mine = windows.filter((w) => w.label === label);
    const messages = mine.reduce((n, w) => n + w.messages, 0);
    const ms = mine.reduce((n, w) => n + (w.toMs - w.fromMs), 0);
    const per = (n: number) => (messages > 0 ? (n * usPerSample) / messages : NaN);
    return {
      label,
      messages,
      mainSamples: a.main,
      mainBusy: (a.main * usPerSample) / 1000 / ms,
      perMessageUs: Object.fromEntries(LAYERS.map((l) => [l, per(a.layers[l])])) as Record<Layer, number>,
      kernelShare: a.main > 0 ? a.kernel / a.main : NaN,
      otherThreadsUs: per(a.other),
    };
  });
}

/** Whether `perf` can be run here. */
export function perfAvailable(): boolean {
  const r = spawnSync('perf', ['--version'], { stdio: 'ignore' });
  return r.status === 0;
}

/**
 * A `perf record` of one process (all its threads), on the monotonic clock, until `stop()`. The
 * software clock event, so that every sample stands for the same time (1 / PERF_HZ s).
 */
export class PerfRecording {
  private readonly child: ChildProcess;
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>;
  private stderr = '';

  constructor(
    readonly pid: number,
    readonly file: string,
  ) {
    const args = ['record', '-e', 'cpu-clock', '-F', String(PERF_HZ), '-g', '-k', 'mono', '-p', String(pid), '-o', file];
    this.child = spawn('perf', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child.stderr?.on('data', (b: Buffer) => (this.stderr += b.toString()));
    this.exited = new Promise((resolve) => {
      this.child.once('error', (error) => resolve({ code: null, signal: null, error }));
      this.child.once('close', (code, signal) => resolve({ code, signal }));
    });
  }

  /** Ends the recording (perf writes its file on SIGINT); throws if nothing was recorded. */
  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGINT');
    const e = await this.exited;
    if (!e.error && (e.code === 0 || e.signal === 'SIGINT') && existsSync(this.file)) return;
    throw new Error(`perf record of pid ${this.pid} failed: ${e.error?.message ?? lastLines(this.stderr)}`);
  }

  /** Every sample of the process, as `perf script` prints them; throws if perf script fails. */
  async *samples(): AsyncGenerator<Sample> {
    const script = spawn('perf', ['script', '-F', 'tid,time,ip,sym,dso', '-i', this.file], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    script.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const closed = new Promise<number | null>((resolve, reject) => {
      script.once('error', reject);
      script.once('close', resolve);
    });
    // Awaited below, once the output is read; a failure to start must not go unhandled meanwhile.
    closed.catch(() => undefined);
    yield* readSamples(createInterface({ input: script.stdout, crlfDelay: Infinity }));
    const code = await closed;
    if (code !== 0) throw new Error(`perf script of ${this.file} failed (${code}): ${lastLines(stderr)}`);
  }
}

const lastLines = (text: string): string => text.trim().split('\n').slice(-3).join(' | ');

const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '–');

/** A markdown table of one workload's phases: µs of main-thread CPU per message by layer, service beside ceiling. */
export function layersTable(service: readonly WindowLayers[], ceiling: readonly WindowLayers[]): string {
  const head = ['µs of CPU per message', ...service.flatMap((w) => [`service ${w.label}`, `ceiling ${w.label}`])];
  const pair = (f: (w: WindowLayers) => number) =>
    service.flatMap((w) => {
      const c = ceiling.find((x) => x.label === w.label);
      return [fmt(f(w)), c ? fmt(f(c)) : '–'];
    });
  const rows = [
    ...LAYERS.map((l) => [l, ...pair((w) => w.perMessageUs[l])]),
    ['main thread, all layers', ...pair((w) => LAYERS.reduce((n, l) => n + w.perMessageUs[l], 0))],
    ['… of which in the kernel (%)', ...pair((w) => 100 * w.kernelShare)],
    ['main thread busy (% of the phase)', ...pair((w) => 100 * w.mainBusy)],
    ['other threads', ...pair((w) => w.otherThreadsUs)],
  ];
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), line(head.map((_, i) => (i === 0 ? '---' : '---:'))), ...rows.map(line)].join('\n');
}

/** The phases of the DM and rooms workloads of one target, and the service's offline fills, as windows. */
export function phaseWindows(
  dm: readonly { max: PhaseWindow; paced: PhaseWindow; half: PhaseWindow }[],
  rooms: readonly PhaseWindow[],
  replay: readonly { offlineFromMs: number; offlineToMs: number; offlineQueued: number }[],
  pacedRate: number,
): Window[] {
  const w = (label: string, p: PhaseWindow): Window => ({ label, fromMs: p.monoFromMs, toMs: p.monoToMs, messages: p.accepted });
  return [
    ...dm.flatMap((r) => [w('dm max', r.max), w(`dm ${pacedRate}/s`, r.paced), w('dm ½ max', r.half)]),
    ...rooms.map((p) => w('rooms', p)),
    ...replay.map((r) => ({ label: 'offline fill', fromMs: r.offlineFromMs, toMs: r.offlineToMs, messages: r.offlineQueued })),
  ];
}

/** What a phase result tells about its window. */
export interface PhaseWindow {
  monoFromMs: number;
  monoToMs: number;
  accepted: number;
}

/** One `--perf` run: a recording of the service's first process and one of the ceiling. */
export class PerfRun {
  private readonly service: PerfRecording;
  private readonly ceiling: PerfRecording;

  constructor(servicePid: number, ceilingPid: number, fileStem: string) {
    this.service = new PerfRecording(servicePid, `${fileStem}-service.data`);
    this.ceiling = new PerfRecording(ceilingPid, `${fileStem}-ceiling.data`);
  }

  /** Ends both recordings and sorts their samples into the phases' windows. */
  async finish(service: readonly Window[], ceiling: readonly Window[]): Promise<PerfReport> {
    await Promise.all([this.service.stop(), this.ceiling.stop()]);
    const s = await layersByWindow(this.service.samples(), this.service.pid, service, 'service');
    const c = await layersByWindow(this.ceiling.samples(), this.ceiling.pid, ceiling, 'ceiling');
    // The JIT symbol maps that --perf-basic-prof made the processes write, copied beside the data
    // (`perf report` reads /tmp/perf-<pid>.map: copy one back there to read the data again); the
    // harness removes them from /tmp when it stops the processes.
    for (const r of [this.service, this.ceiling]) {
      const map = `/tmp/perf-${r.pid}.map`;
      if (existsSync(map)) copyFileSync(map, r.file.replace(/\.data$/, `-${r.pid}.map`));
    }
    for (const [who, ws] of [
      ['service', s],
      ['ceiling', c],
    ] as const)
      if (ws.length > 0 && ws.every((w) => w.mainSamples === 0)) throw new Error(`perf: no samples of the ${who}'s main thread in any phase`);
    return { files: { service: this.service.file, ceiling: this.ceiling.file }, service: s, ceiling: c };
  }
}

export interface PerfReport {
  files: { service: string; ceiling: string };
  service: WindowLayers[];
  ceiling: WindowLayers[];
}
