/**
 * `npm run bench`: starts the service (built, as a child process, with raised rate limits) and
 * the ceiling side by side, runs each workload several times against both, alternating which
 * goes first, and prints a markdown table of medians and ratios; the full figures go to
 * bench/runs/<backend>-<timestamp>.json (ignored by git: a run worth citing is copied into
 * bench/results/). See docs/BENCHMARKS.md.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { postgresBackend, sqliteBackend, type Backend } from './backends.js';
import { runTag } from './fixtures.js';
import { parseOptions, USAGE, type Options } from './options.js';
import { recording } from './stats.js';
import { SERVICE_MAIN, killAllNow, startChildOnFreePort, stopAll, type ChildService, type ChildServiceOptions } from '@svc/testkit/child';
import { formatSummary, summarise, type ProfileSummary } from './profile-top.js';
import { PerfRun, layersTable, perfAvailable, phaseWindows, type PerfReport } from './perf-layers.js';
import { integrityNotes, markdownTable, summaryRows, type TargetRuns } from './report.js';
import { CeilingTarget, ServiceTarget, type Target } from './targets.js';
import { DmWorkload } from './workloads/dm.js';
import { IdleWorkload } from './workloads/idle.js';
import { ReplayWorkload } from './workloads/replay.js';
import { RoomsWorkload } from './workloads/rooms.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const runsDir = join(root, 'bench', 'runs');
const profileDir = join(runsDir, 'profiles');
/**
 * How the servers under test run: their log is not read (this process is busy with the load),
 * and a stop waits long enough for the CPU profile to be written.
 */
const CHILD: Pick<ChildServiceOptions, 'log' | 'graceMs'> = { log: false, graceMs: 15_000 };
/** The most a limit may be (docs/API.md); the benchmark must never meet a 429. */
const RAISED_LIMIT = '10000000';

function machine() {
  const cpuModel = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? cpus()[0]?.model ?? 'unknown';
  return {
    nproc: cpus().length,
    cpuModel,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    freeMemoryGiB: Math.round((freemem() / 2 ** 30) * 10) / 10,
    node: process.version,
    loadavg: loadavg(),
  };
}

/** Open-file limit of this process (/proc/self/limits), so 10,000 streams fail early and clearly if it is too low. */
function maxOpenFiles(): number {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return !m || m[1] === 'unlimited' ? Infinity : Number(m[1]);
}

/**
 * `--perf`: JavaScript named for perf, compiled and interpreted alike (a map in /tmp per process,
 * removed at the end). V8 then also writes a small log of its own, by default into the working
 * directory: it goes with the profiles.
 */
const perfArgs = (o: Options): string[] =>
  o.perf ? ['--perf-basic-prof', '--interpreted-frames-native-stack', '--no-logfile-per-isolate', `--logfile=${join(profileDir, 'v8-%p.log')}`] : [];

/** Service process number `k` (0-based) of `--instances`; only the first is profiled, so the profile is one process's. */
async function startService(o: Options, backend: Backend, k: number): Promise<ChildService> {
  const args = [...(o.profile && k === 0 ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []), ...(k === 0 ? perfArgs(o) : []), SERVICE_MAIN];
  return startChildOnFreePort((port) => ({
    ...CHILD,
    name: o.instances > 1 ? `service #${k + 1}` : 'service',
    args,
    env: {
      ...backend.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      ORIGIN: `http://127.0.0.1:${port}`,
      LIMIT_MESSAGES_PER_MIN: RAISED_LIMIT,
      LIMIT_WRITES_PER_MIN: RAISED_LIMIT,
      LIMIT_REGISTER_PER_HOUR: RAISED_LIMIT,
      LIMIT_LOGIN_PER_10MIN: RAISED_LIMIT,
      LIMIT_LOGIN_PER_IP_PER_10MIN: RAISED_LIMIT,
      LIMIT_LOGIN_PER_NICK_PER_10MIN: RAISED_LIMIT,
      LOG_LEVEL: 'warn',
    },
  }));
}

async function startCeiling(o: Options): Promise<ChildService> {
  return startChildOnFreePort((port) => ({
    ...CHILD,
    name: 'ceiling',
    args: [...perfArgs(o), join(root, 'bench/dist/ceiling.js')],
    env: { PORT: String(port), HOST: '127.0.0.1' },
  }));
}

/** Runs `fn` for both targets in each repetition, alternating which goes first. */
async function sideBySide<W, R>(
  o: Options,
  targets: Target[],
  setup: (t: Target) => Promise<W>,
  fn: (w: W, t: Target, rep: number) => Promise<R>,
  out: Map<Target, R[]>,
  close?: (w: W) => void,
): Promise<void> {
  const made = new Map<Target, W>();
  for (const t of targets) made.set(t, await setup(t));
  try {
    for (let rep = 0; rep < o.runs; rep++) {
      const order = rep % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) out.get(t)!.push(await fn(made.get(t)!, t, rep));
    }
  } finally {
    if (close) for (const w of made.values()) close(w);
  }
}

function newestProfile(since: number): string | null {
  let best: { f: string; t: number } | null = null;
  for (const f of readdirSync(profileDir)) {
    if (!f.endsWith('.cpuprofile')) continue;
    const t = statSync(join(profileDir, f)).mtimeMs;
    if (t >= since && (!best || t > best.t)) best = { f: join(profileDir, f), t };
  }
  return best?.f ?? null;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const parsed = parseOptions(argv);
  if (parsed === 'help') {
    process.stdout.write(USAGE + '\n');
    return;
  }
  const o = parsed;
  recording.tails = o.tails;
  const need = (o.workloads.has('idle') ? o.idleStreams : 0) + 2000;
  if (maxOpenFiles() < need) throw new Error(`the open-file limit (ulimit -n) is ${maxOpenFiles()}; ${need} are needed. Raise it or pass --streams`);
  mkdirSync(profileDir, { recursive: true });

  const startedAt = new Date();
  const meta = { date: startedAt.toISOString(), command: `npm run bench${argv.length ? ` -- ${argv.join(' ')}` : ''}`, machineAtStart: machine() };
  process.stderr.write(
    `bench: ${meta.command}, ${meta.machineAtStart.nproc} CPUs, load ${meta.machineAtStart.loadavg.map((x) => x.toFixed(2)).join(' ')}\n`,
  );

  if (o.perf && !perfAvailable()) throw new Error('--perf needs Linux perf on the PATH (Debian: linux-perf)');
  const backend = o.backend === 'sqlite' ? sqliteBackend() : await postgresBackend();
  /** The targets, once started: with --perf, their processes' JIT maps are removed at the end. */
  const started: Target[] = [];
  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    await stopAll();
    if (o.perf) for (const t of started) for (const pid of t.pids) rmSync(`/tmp/perf-${pid}.map`, { force: true });
    await backend.destroy().catch((e: Error) => process.stderr.write(`cleanup of the ${backend.name} store failed: ${e.message}\n`));
  };
  process.once('SIGINT', () => {
    process.stderr.write('\ninterrupted: stopping the servers\n');
    void cleanup().finally(() => process.exit(130));
  });
  process.once('exit', killAllNow);

  let profile: ProfileSummary | null = null;
  let perf: PerfReport | null = null;
  try {
    const profileSince = Date.now();
    // One after the other: the first applies the schema's migrations before the others start.
    const children: ChildService[] = [];
    for (let k = 0; k < o.instances; k++) children.push(await startService(o, backend, k));
    if (backend.storeCpu) process.stderr.write(`store CPU read from: ${backend.storeCpu.describe()}\n`);
    const service = new ServiceTarget(children, backend.storeCpu);
    const ceiling = new CeilingTarget(await startCeiling(o));
    const targets: Target[] = [service, ceiling];
    started.push(...targets);
    const runs = new Map<Target, TargetRuns>(targets.map((t) => [t, { idle: [], dm: [], rooms: [], replay: [] }]));
    const collect = <K extends keyof TargetRuns>(k: K) => new Map(targets.map((t) => [t, runs.get(t)![k]])) as Map<Target, TargetRuns[K]>;
    const tag = runTag();

    if (o.workloads.has('idle')) {
      process.stderr.write(`idle streams: setting up ${o.idleStreams} devices\n`);
      await sideBySide(
        o,
        targets,
        (t) => IdleWorkload.setup(t, o, `i${tag}`),
        (w, _t, rep) => w.run(rep),
        collect('idle'),
      );
    }
    // Recorded from here: the idle workload restarts the processes.
    const perfRun =
      o.perf && (o.workloads.has('dm') || o.workloads.has('rooms') || o.workloads.has('replay'))
        ? new PerfRun(service.children[0]!.pid, ceiling.children[0]!.pid, join(profileDir, `perf-${tag}`))
        : null;
    if (o.workloads.has('dm')) {
      process.stderr.write(
        `dm: ${o.pairs} pairs, ${o.recipientDevices} recipient device(s) each${o.ackBatch > 0 ? `, acks of ${o.ackBatch}` : ''}\n`,
      );
      await sideBySide(
        o,
        targets,
        (t) => DmWorkload.setup(t, o, `d${tag}`),
        (w) => w.run(o),
        collect('dm'),
        (w) => w.close(),
      );
    }
    if (o.workloads.has('rooms')) {
      process.stderr.write(`rooms: ${o.rooms} × ${o.roomSize} members × 2 devices, ${o.roomSenders} senders each\n`);
      await sideBySide(
        o,
        targets,
        (t) => RoomsWorkload.setup(t, o, `r${tag}`),
        (w) => w.run(o),
        collect('rooms'),
        (w) => w.close(),
      );
    }
    if (o.workloads.has('replay')) {
      process.stderr.write(`replay: ${o.replayCount} envelopes\n`);
      await sideBySide(
        o,
        [service],
        (t) => ReplayWorkload.setup(t, `q${tag}`),
        (w) => w.run(o),
        collect('replay'),
      );
    }

    if (perfRun) {
      const windows = (t: Target) => phaseWindows(runs.get(t)!.dm, runs.get(t)!.rooms, runs.get(t)!.replay, o.pacedRate);
      perf = await perfRun.finish(windows(service), windows(ceiling));
    }
    for (const t of targets) t.close();
    for (const c of [...service.children, ...ceiling.children]) await c.stop();
    if (o.profile) {
      const file = newestProfile(profileSince);
      if (file) profile = summarise(file, 30);
    }

    const s = runs.get(service)!;
    const c = runs.get(ceiling)!;
    const rows = summaryRows(s, c, o);
    const notes = [...integrityNotes('service', s), ...integrityNotes('ceiling', c)];
    const machineAtEnd = machine();
    const label = o.quick ? 'quick run (small counts, short phases; not representative)' : `${o.runs} runs, medians`;
    const instances = o.instances > 1 ? `, ${o.instances} service instances` : '';
    let text = `\n## ${backend.describe}${instances}\n\n${meta.command} — ${meta.date} — ${label}\n\n${markdownTable(rows)}\n`;
    if (notes.length) text += `\nWarnings:\n${notes.map((n) => `- ${n}`).join('\n')}\n`;
    text += `\nLoad average at start ${meta.machineAtStart.loadavg.map((x) => x.toFixed(2)).join(' ')}, at end ${machineAtEnd.loadavg.map((x) => x.toFixed(2)).join(' ')}\n`;
    if (profile) text += `\n${formatSummary({ ...profile, file: relative(root, profile.file) })}\n`;
    if (perf)
      text += `\nMain thread by layer (perf, ${relative(root, perf.files.service)} and ${relative(root, perf.files.ceiling)}):\n\n${layersTable(perf.service, perf.ceiling)}\n`;
    process.stdout.write(text);

    mkdirSync(runsDir, { recursive: true });
    const out = join(runsDir, `${backend.name}-${meta.date.replace(/[:.]/g, '-')}.json`);
    const json = {
      ...meta,
      machineAtEnd,
      backend: backend.describe,
      options: { ...o, workloads: [...o.workloads] },
      summary: rows,
      warnings: notes,
      runs: { service: s, ceiling: c },
      ...(profile ? { profile: { ...profile, file: relative(root, profile.file) } } : {}),
      ...(perf ? { perf: { ...perf, files: { service: relative(root, perf.files.service), ceiling: relative(root, perf.files.ceiling) } } } : {}),
    };
    writeFileSync(out, JSON.stringify(json, null, 1) + '\n');
    process.stderr.write(`results written to ${relative(process.cwd(), out)}\n`);
  } finally {
    await cleanup();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
