/**
 * `npm run bench:disk-syncs`: how long this machine's disk takes to make a small write durable,
 * alone, without the service. Every durable send waits for such a sync (SQLite's WAL, PostgreSQL's
 * commit), so one sync that stalls for 300 ms holds every send of those 300 ms, and at 2,000 DM/s
 * that is more than the 1 % of deliveries a p99 looks at: the paced phases' p99 then measures the
 * disk, not the service. Run it before trusting a run's latencies, or beside one: each stall is
 * printed with its wall-clock time, to be set beside the phases' `startedAt` and `--tails`
 * (docs/BENCHMARKS.md).
 *
 * It writes 16 KiB (about one group commit's WAL frames) and calls `fdatasync`, `rate` times a
 * second, over an 8 MiB file written and synced whole first, in turn: like the service's WAL once
 * it has its size, the file never grows under the timed syncs. The file is deleted at the end.
 *
 *   npm run bench:disk-syncs -- [seconds (30)] [syncs a second (100)] [directory (the system's temp)]
 */
import { closeSync, fdatasyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/** A sync slower than this is printed on its own line. */
const STALL_MS = 20;
const WRITE_BYTES = 16 * 1024;
const FILE_BYTES = 8 * 1024 * 1024;

const [seconds = 30, rate = 100] = process.argv.slice(2, 4).map(Number);
if (!(seconds > 0) || !(rate > 0)) throw new Error('usage: disk-syncs [seconds > 0] [syncs a second > 0] [directory]');
const dir = mkdtempSync(join(process.argv[4] ?? tmpdir(), 'svc-disk-syncs-'));
const fd = openSync(join(dir, 'syncs.bin'), 'w');
const block = Buffer.alloc(WRITE_BYTES, 1);
const ms: number[] = [];
try {
  for (let at = 0; at < FILE_BYTES; at += WRITE_BYTES) writeSync(fd, block, 0, WRITE_BYTES, at);
  fdatasyncSync(fd);
  const start = performance.now();
  for (let i = 0; performance.now() - start < seconds * 1000; i++) {
    const wall = new Date();
    const t = performance.now();
    writeSync(fd, block, 0, WRITE_BYTES, (i * WRITE_BYTES) % FILE_BYTES);
    fdatasyncSync(fd);
    const took = performance.now() - t;
    ms.push(took);
    if (took > STALL_MS) console.log(`stall  ${wall.toISOString()}  ${took.toFixed(1)} ms`);
    // Paced from the start, not from the last sync: a stall is not followed by a pause.
    const next = start + ((i + 1) * 1000) / rate;
    const wait = next - performance.now();
    if (wait > 0) await sleep(wait);
  }
} finally {
  closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
}
ms.sort((a, b) => a - b);
const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))]!.toFixed(3);
const over = (limit: number) => ms.filter((x) => x > limit).length;
console.log(
  `${ms.length} syncs of ${WRITE_BYTES / 1024} KiB in ${seconds} s: p50 ${at(0.5)} ms, p99 ${at(0.99)}, p99.9 ${at(0.999)}, ` +
    `max ${ms.at(-1)!.toFixed(1)}; over 10 ms ${over(10)}, over 100 ms ${over(100)}`,
);
