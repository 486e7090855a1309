/**
 * `npm run bench:attachments`: the attachment store through the service's real routes (a child
 * process on a fresh SQLite file, or PostgreSQL with `--backend postgres`) beside the ceiling
 * (ceiling.ts, attachments kept in memory), both fed the same JSON bodies in the same run,
 * alternating which goes first. It measures the upload and download throughput of a 1 MB and a
 * 25 MB file (MB/s of ciphertext), and a 5 MB photo sent to a room of 20: the time until every
 * member has it, and the bytes the store holds for it. Medians are printed as a markdown table;
 * every run goes to bench/runs/attachments-<backend>-<timestamp>.json.
 */
import { mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '@svc/testkit/port';
import { SERVICE_MAIN, killAllNow, startChildOnFreePort, stopAll, type ChildService } from '@svc/testkit/child';
import { AttachmentClient, benchFile, checkDownload, type BenchFile } from './attachment-client.js';
import { RoomPhoto, type RoomPhotoRun } from './attachment-room.js';
import { attachmentUsage, parseAttachmentOptions, type AttachmentOptions } from './attachment-options.js';
import { storedBytes } from './attachment-metrics.js';
import { postgresBackend, sqliteBackend } from './backends.js';
import { runTag } from './fixtures.js';
import { median } from './stats.js';
import { formatSummary, summarise } from './profile-top.js';
import { UPLOAD_IN_FLIGHT } from '@svc/sdk';
import { CeilingTarget, ServiceTarget, type Target } from './targets.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const runsDir = join(root, 'bench', 'runs');
const profileDir = join(runsDir, 'profiles');
/** The most a rate limit may be: the benchmark must never meet a 429. */
const RAISED_LIMIT = '10000000';
/** The most the upload limit and the quota may be, so that repeated runs never meet them. */
const RAISED_BYTES = String(1024 ** 4);
const MB = 1_000_000;

async function startService(env: Record<string, string>, metricsPort: number, profile: boolean): Promise<ChildService> {
  return startChildOnFreePort((port) => ({
    log: false,
    graceMs: 15_000,
    name: 'service',
    args: [...(profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []), SERVICE_MAIN],
    env: {
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
      ORIGIN: `http://127.0.0.1:${port}`,
      METRICS_PORT: String(metricsPort),
      LIMIT_MESSAGES_PER_MIN: RAISED_LIMIT,
      LIMIT_WRITES_PER_MIN: RAISED_LIMIT,
      LIMIT_REGISTER_PER_HOUR: RAISED_LIMIT,
      LIMIT_LOGIN_PER_10MIN: RAISED_LIMIT,
      LIMIT_LOGIN_PER_IP_PER_10MIN: RAISED_LIMIT,
      LIMIT_UPLOAD_BYTES_PER_MIN: RAISED_BYTES,
      ATTACHMENT_QUOTA_BYTES: RAISED_BYTES,
      LOG_LEVEL: 'warn',
    },
  }));
}

function startCeiling(): Promise<ChildService> {
  return startChildOnFreePort((port) => ({
    log: false,
    name: 'ceiling',
    args: [join(root, 'bench/dist/ceiling.js')],
    env: { PORT: String(port), HOST: '127.0.0.1' },
  }));
}

/** The figures of one target, each a list of runs. */
interface TargetRuns {
  /** Keyed `upload <plain MB> MB ×<in flight>` and `download <plain MB> MB`, in MB/s of ciphertext. */
  throughput: Record<string, number[]>;
  photo: RoomPhotoRun[];
}

const mbps = (bytes: number, ms: number) => bytes / MB / (ms / 1000);

/** Upload (timed), download (timed, then checked byte for byte) and delete, for each in-flight count. */
async function transfer(t: Target, c: AttachmentClient, file: BenchFile, inFlight: number[], out: TargetRuns): Promise<void> {
  const mb = file.plainBytes / MB;
  for (const n of inFlight) {
    const t0 = performance.now();
    const id = await c.upload(file, n);
    (out.throughput[`upload ${mb} MB ×${n}`] ??= []).push(mbps(file.ciphertext.length, performance.now() - t0));
    const t1 = performance.now();
    const got = await c.download(id);
    (out.throughput[`download ${mb} MB`] ??= []).push(mbps(got.bytes, performance.now() - t1));
    checkDownload(file, got, t.name);
    await c.remove(id);
  }
}

function table(o: AttachmentOptions, s: TargetRuns, c: TargetRuns, photo: BenchFile, stored: number[]): string {
  const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '–');
  const rows = ['| | service | ceiling | service ÷ ceiling |', '|---|---|---|---|'];
  const keys = o.sizesMb.flatMap((mb) => [...o.inFlight.map((n) => `upload ${mb} MB ×${n}`), `download ${mb} MB`]);
  for (const key of keys) {
    const a = median(s.throughput[key]!);
    const b = median(c.throughput[key]!);
    rows.push(`| ${key} (MB/s) | ${f(a)} | ${f(b)} | ${f(a / b, 2)} ${a / b >= 0.5 ? '✓' : '✗'} |`);
  }
  const size = `${photo.plainBytes / MB} MB photo to ${o.members} members`;
  for (const [k, label] of [
    ['uploadMs', 'upload'],
    ['downloadsMs', 'message sent → every member has it'],
    ['totalMs', 'first part → every member has it'],
  ] as const) {
    const a = median(s.photo.map((r) => r[k]));
    const b = median(c.photo.map((r) => r[k]));
    rows.push(`| ${size}: ${label} (ms) | ${f(a, 0)} | ${f(b, 0)} | ${f(b / a, 2)} |`);
  }
  const ratio = median(stored) / photo.ciphertext.length;
  rows.push(`| ${size}: bytes stored ÷ its ciphertext (${photo.ciphertext.length.toLocaleString('en')} B) | ${f(ratio, 3)} | | |`);
  return rows.join('\n');
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const o = parseAttachmentOptions(argv);
  if (o === 'help') return void process.stdout.write(attachmentUsage + '\n');
  const command = `npm run bench:attachments${argv.length ? ` -- ${argv.join(' ')}` : ''}`;
  const date = new Date().toISOString();
  process.stderr.write(
    `bench: ${command}, ${cpus().length} CPUs, load ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}\n`,
  );

  if (o.profile) mkdirSync(profileDir, { recursive: true });
  const backend = o.backend === 'sqlite' ? sqliteBackend() : await postgresBackend();
  process.once('exit', killAllNow);
  try {
    const metricsPort = await freePort();
    const service = new ServiceTarget([await startService(backend.env, metricsPort, o.profile)], null);
    const ceiling = new CeilingTarget(await startCeiling());
    const targets: Target[] = [service, ceiling];
    const runs = new Map<Target, TargetRuns>(targets.map((t) => [t, { throughput: {}, photo: [] }]));
    const tag = runTag();

    const files = o.sizesMb.map((mb) => benchFile(mb * MB));
    const clients = new Map<Target, AttachmentClient>();
    for (const t of targets) {
      const [a] = await t.createAccounts(`a${tag}`, 1, 1);
      clients.set(t, new AttachmentClient(t.api.port, a!.cookie, Math.max(...o.inFlight)));
    }
    // One untimed round first, so that neither side's first measurement pays for its JIT warming up.
    const warmUp = benchFile(MB);
    for (const t of targets) await transfer(t, clients.get(t)!, warmUp, o.inFlight, { throughput: {}, photo: [] });
    for (const file of files) {
      process.stderr.write(`transfer: ${file.plainBytes / MB} MB (${file.ciphertext.length} bytes of ciphertext, ${file.bodies.length} parts)\n`);
      for (let rep = 0; rep < o.runs; rep++)
        for (const t of rep % 2 === 0 ? targets : [...targets].reverse()) await transfer(t, clients.get(t)!, file, o.inFlight, runs.get(t)!);
    }
    for (const c of clients.values()) c.close();

    const photo = benchFile(o.photoMb * MB);
    process.stderr.write(`photo: ${o.photoMb} MB (${photo.ciphertext.length} bytes of ciphertext) to ${o.members} members\n`);
    const rooms = new Map<Target, RoomPhoto>();
    for (const t of targets) rooms.set(t, await RoomPhoto.setup(t, o.members, `p${tag}`));
    const stored: number[] = [];
    for (let rep = 0; rep < o.runs; rep++)
      for (const t of rep % 2 === 0 ? targets : [...targets].reverse()) {
        const room = rooms.get(t)!;
        const before = t === service ? await storedBytes(metricsPort) : 0;
        const r = await room.run(photo, o.photoInFlight);
        if (t === service) stored.push((await storedBytes(metricsPort)) - before);
        runs.get(t)!.photo.push(r);
        await room.remove(r.id);
      }
    for (const r of rooms.values()) r.close();
    for (const t of targets) t.close();
    await stopAll(15_000);

    const s = runs.get(service)!;
    const c = runs.get(ceiling)!;
    const label = o.runs > 1 ? `medians of ${o.runs} runs` : 'one run';
    const text = `\n## Attachments: ${backend.describe}\n\n${command} — ${date} — ${label}; ×N: the first part alone, then N in flight, as the SDK sends them (N = ${UPLOAD_IN_FLIGHT})\n\n${table(o, s, c, photo, stored)}\n\nLoad average at end ${loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}\n`;
    process.stdout.write(text);
    if (o.profile) {
      // The service's main thread (thread 0; its checkpoint worker writes one too) wrote its profile
      // as it stopped: the newest such file.
      const newest = readdirSync(profileDir)
        .filter((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f))
        .map((f) => ({ f, t: statSync(join(profileDir, f)).mtimeMs }))
        .sort((a, b) => a.t - b.t)
        .pop()?.f;
      if (newest) process.stdout.write('\n' + formatSummary(summarise(join(profileDir, newest), 30)) + '\n');
    }

    mkdirSync(runsDir, { recursive: true });
    const out = join(runsDir, `attachments-${backend.name}-${date.replace(/[:.]/g, '-')}.json`);
    const json = {
      date,
      command,
      backend: backend.describe,
      options: o,
      files: files.map((f) => ({ plainBytes: f.plainBytes, ciphertextBytes: f.ciphertext.length, parts: f.bodies.length })),
      photo: { plainBytes: photo.plainBytes, ciphertextBytes: photo.ciphertext.length, storedBytes: stored },
      runs: { service: s, ceiling: c },
    };
    writeFileSync(out, JSON.stringify(json, null, 1) + '\n');
    process.stderr.write(`results written to ${relative(process.cwd(), out)}\n`);
  } finally {
    await stopAll();
    await backend.destroy().catch((e: Error) => process.stderr.write(`cleanup of the ${backend.name} store failed: ${e.message}\n`));
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
