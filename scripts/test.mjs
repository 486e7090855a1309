// Runs every compiled test file (packages/*/dist/test/**/*.test.js) with Node's test runner.
// The server's API and push suites run once per backend mode (TEST_MODE, see
// packages/testkit/src/modes.ts): SQLite; PostgreSQL + Redis; two instances on PostgreSQL + Redis.
// Arguments filter files by substring; TEST_MODES=sqlite,postgres limits the modes; TEST_LANES=1
// runs the suites one after another; TEST_CONCURRENCY and TEST_WEB_CONCURRENCY set how many files
// of a run go at a time. At the end it prints the tests and assertions of each run.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { makeTestCa } from './test-ca.mjs';
import { browser, commandLine, modal, modesFromEnv, testFiles, testNodeOptions } from './test-files.mjs';

const modes = modesFromEnv();
const selected = testFiles(process.argv.slice(2));
if (selected.length === 0) {
  console.error('no test files found');
  process.exit(1);
}

const tlsDir = makeTestCa();
const countDir = mkdtempSync(join(tmpdir(), 'svc-test-count-'));
const baseEnv = { ...process.env, TEST_TLS_DIR: tlsDir, NODE_EXTRA_CA_CERTS: join(tlsDir, 'ca.pem') };
// The browser suites spend most of their time waiting (for the other browser, for the message
// budget of a minute), each on its own server and browser: they run several files at a time.
const webConcurrency = Math.max(1, Number(process.env.TEST_WEB_CONCURRENCY || 3));
// The other files are independent too (each starts its own servers on its own store) and wait much
// of the time for fsync, PostgreSQL, Redis or a child process: TEST_CONCURRENCY of them at a time
// (default 3; with 2 a whole run used about half of this two-core machine's CPU).
const concurrency = Math.max(1, Number(process.env.TEST_CONCURRENCY || 3));
// Each file's time in the previous run, per mode. A run's files start longest first (see
// run-files.mjs): started in name order, a long file near the end (the history transfer, the
// minute of the pacing test) ran on alone while the other slots stood idle. A file with no time
// yet goes first. A checkout that has run no tests yet (a fresh clone in CI) takes the times of a
// whole run kept in the repository, rounded to seconds (test-times.json; any run's will do, since
// only their order counts).
const timesFile = join('node_modules', '.cache', 'svc-test-times.json');
const readTimes = (file) => {
  try {
    return JSON.parse(readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
};
const lastTimes = readTimes(timesFile) ?? readTimes(fileURLToPath(new URL('./test-times.json', import.meta.url))) ?? {};
// The runner names a file by its TypeScript source (source maps): packages/x/test/a.test.ts for
// packages/x/dist/test/a.test.js, packages/web/unit/a.test.ts for packages/web/dist/node/unit/a.test.js.
const sourceOf = (f) =>
  f
    .replace(/\\/g, '/')
    .replace(/\/dist\/test\//, '/test/')
    .replace(/\/dist\/node\//, '/')
    .replace(/\.js$/, '.ts');
const longestFirst = (mode, files) => {
  const took = (f) => lastTimes[mode]?.[sourceOf(f)] ?? lastTimes[mode]?.[f] ?? Infinity;
  return [...files].sort((a, b) => (took(a) === took(b) ? a.localeCompare(b) : took(b) > took(a) ? 1 : -1));
};
const runFiles = fileURLToPath(new URL('./run-files.mjs', import.meta.url));

// The command line's suites start its program as child processes, several per test: a run of
// their own, last, so that it goes to whichever lane is free first (the PostgreSQL runs end
// minutes before the SQLite ones) instead of lengthening the longest run.
const runs = [];
const last = [];
for (const mode of modes) {
  const batch = longestFirst(mode, mode === modes[0] ? selected : selected.filter(modal));
  const rest = batch.filter((f) => !browser(f) && !commandLine(f));
  const cli = batch.filter(commandLine);
  const web = batch.filter(browser);
  if (rest.length > 0) runs.push({ name: `TEST_MODE=${mode}`, mode, batch: rest, concurrency });
  if (web.length > 0) runs.push({ name: `TEST_MODE=${mode} browser`, mode, batch: web, concurrency: webConcurrency });
  if (cli.length > 0) last.push({ name: `TEST_MODE=${mode} command line`, mode, batch: cli, concurrency });
}
runs.push(...last);

// The runs are independent (each server gets its own SQLite file, or its own PostgreSQL schema and
// Redis key prefix), so they share the machine: TEST_LANES runs at a time (default 3, so that the
// two short PostgreSQL runs go beside the two long SQLite ones instead of after one of them). A
// run's output is printed whole when it ends, so the log reads as if they ran one after another.
const lanes = Math.max(1, Number(process.env.TEST_LANES || 3));
const started = Date.now();

function runOne(run, index) {
  const assertLog = join(countDir, `asserts-${index}.log`);
  const timesLog = join(countDir, `times-${index}.json`);
  const env = {
    ...baseEnv,
    TEST_MODE: run.mode,
    TEST_ASSERT_LOG: assertLog,
    NODE_OPTIONS: testNodeOptions('lean-test-hook.mjs', 'count-asserts.mjs'),
  };
  const args = ['--enable-source-maps', runFiles, String(run.concurrency), timesLog, ...run.batch];
  return new Promise((resolve) => {
    const t0 = Date.now();
    console.log(`--- started ${run.name}: ${run.batch.length} files, ${run.concurrency} at a time`);
    const child = spawnMeasured(process.execPath, args, env);
    const out = [];
    const times = [];
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => out.push(b));
    child.stdio[3]?.on('data', (b) => times.push(b));
    child.on('close', (code) => {
      const cpu = cpuSeconds(Buffer.concat(times).toString('utf8'));
      const text = Buffer.concat(out).toString('utf8');
      const seconds = Math.round((Date.now() - t0) / 1000);
      console.log(`\n=== ${run.name}: ${run.batch.length} files, ${run.concurrency} at a time (${seconds} s) ===\n`);
      process.stdout.write(text);
      const tests = Number(/^ℹ tests (\d+)/m.exec(text)?.[1] ?? 0);
      const passed = Number(/^ℹ pass (\d+)/m.exec(text)?.[1] ?? 0);
      // Tests that do not apply to a mode say so (node:test's skip) and count apart from failures.
      const skipped = Number(/^ℹ skipped (\d+)/m.exec(text)?.[1] ?? 0);
      const asserts = existsSync(assertLog)
        ? readFileSync(assertLog, 'utf8')
            .split('\n')
            .filter(Boolean)
            .reduce((n, line) => n + Number(line), 0)
        : 0;
      // The runner's own list of failures, with their messages, for the end of the log.
      const failing = text.includes('\n✖ failing tests:') ? text.slice(text.lastIndexOf('\n✖ failing tests:') + 1) : '';
      if (existsSync(timesLog)) {
        try {
          lastTimes[run.mode] = { ...lastTimes[run.mode], ...JSON.parse(readFileSync(timesLog, 'utf8')) };
        } catch {
          // A run cut short leaves no complete record; the previous times stay.
        }
      }
      resolve({ run, ok: code === 0, tests, passed, skipped, asserts, seconds, cpu, failing });
    });
  });
}

/**
 * The run's test runner, started under bash when there is one so that bash's `times` can report
 * the CPU time of the whole tree it waited for (the runner, the servers and browsers the tests
 * start) on a fourth pipe; without bash the run goes as it is and its CPU time is not known.
 */
function spawnMeasured(cmd, args, env) {
  if (!process.env.TEST_NO_CPU && existsSync('/bin/bash')) {
    const script = '"$@"; code=$?; times >&3; exit $code';
    return spawn('/bin/bash', ['-c', script, 'bash', cmd, ...args], { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe'] });
  }
  return spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** User + system seconds of the children from `times` output (its second line: `0m1.5s 0m0.2s`), or undefined. */
function cpuSeconds(text) {
  const line = text.trim().split('\n')[1];
  const parts = line ? [...line.matchAll(/(\d+)m([\d.]+)s/g)] : [];
  if (parts.length !== 2) return undefined;
  return parts.reduce((n, m) => n + Number(m[1]) * 60 + Number(m[2]), 0);
}

/** The files of a run with a failing test, from the runner's `test at <source file>:<line>:<column>` lines. */
function filesThatFailed(run, failing) {
  const slashes = (p) => p.replace(/\\/g, '/');
  const sources = [...failing.matchAll(/^test at (.+?):\d+:\d+$/gm)].map((m) => slashes(m[1]).replace(/\.[jt]s$/, ''));
  return run.batch.filter((f) => {
    // Named by its TypeScript source (source maps), or by the compiled file itself.
    const compiled = slashes(f).replace(/\.js$/, '');
    const source = compiled.replace('/dist/test/', '/test/');
    return sources.some((s) => s.endsWith(source) || s.endsWith(compiled));
  });
}

/**
 * A browser run that failed has its failed files run once more, alone. The browser suites drive a
 * real Chromium through timeouts on a shared machine whose whole VM can stall for tens of ms;
 * a file that fails and then passes is reported as such at the end of the log (with its first
 * failure), never hidden, and a file that fails twice fails the run.
 */
async function runWithSecondChance(run, index) {
  const first = await runOne(run, index);
  if (first.ok || !browser(run.batch[0]) || !first.failing) return first;
  const files = filesThatFailed(run, first.failing);
  if (files.length === 0) return first;
  const second = await runOne({ ...run, name: `${run.name} (second run of the failed files)`, batch: files }, `${index}-again`);
  if (!second.ok) return first;
  const cpu = first.cpu !== undefined && second.cpu !== undefined ? first.cpu + second.cpu : undefined;
  return { ...first, ok: true, seconds: first.seconds + second.seconds, cpu, flaky: { files, failing: first.failing } };
}

const results = [];
let next = 0;
await Promise.all(
  Array.from({ length: Math.min(lanes, runs.length) }, async () => {
    while (next < runs.length) {
      const i = next++;
      results[i] = await runWithSecondChance(runs[i], i);
    }
  }),
);

// A CI log is often read from its end: what failed, and why, comes right before the summary
// (each failure's message without its stack, up to 40 lines a run; the whole report is in the
// run's output above).
for (const r of results.filter((x) => (!x.ok && x.failing) || x.flaky)) {
  const lines = (r.flaky?.failing ?? r.failing)
    .trimEnd()
    .split('\n')
    .filter((l) => !/^\s+at /.test(l));
  console.log(
    `\n=== ${r.flaky ? 'failed once, then passed on a second run' : 'failures'}: ${r.run.name} ===\n${lines.slice(0, 40).join('\n')}${lines.length > 40 ? `\n… ${lines.length - 40} more lines above` : ''}`,
  );
}
console.log('\n=== summary ===');
for (const r of results) {
  const again = r.flaky ? ` (failed once, passed on a second run: ${r.flaky.files.map((f) => f.split(/[\\/]/).pop()).join(', ')})` : '';
  const skipped = r.skipped ? `, ${r.skipped} skipped in this mode` : '';
  console.log(
    `${r.ok ? 'ok  ' : 'FAIL'} ${r.run.name}: ${r.passed}/${r.tests} tests passed${skipped}${again}, ${r.asserts} assertions, ${r.seconds} s`,
  );
}
// What the run cost, per backend mode: wall seconds of its runs added up (runs of different modes
// overlap in lanes) and the CPU seconds of everything they started, servers and browsers included.
const cost = modes
  .map((mode) => results.filter((r) => r.run.mode === mode))
  .filter((of) => of.length > 0)
  .map((of) => {
    const mode = of[0].run.mode;
    const cpu = of.every((r) => r.cpu !== undefined) ? `${Math.round(of.reduce((n, r) => n + r.cpu, 0))} s CPU` : 'CPU not measured';
    return `${mode} ${of.reduce((n, r) => n + r.seconds, 0)} s wall, ${cpu}`;
  });
const allCpu = results.every((r) => r.cpu !== undefined) ? `, ${Math.round(results.reduce((n, r) => n + r.cpu, 0))} s CPU in all` : '';
console.log(`cost: ${cost.join('; ')}${allCpu}`);
const total = (k) => results.reduce((n, r) => n + r[k], 0);
console.log(
  `all: ${total('passed')}/${total('tests')} tests passed${total('skipped') ? `, ${total('skipped')} skipped` : ''}, ${total('asserts')} assertions, ${Math.round((Date.now() - started) / 1000)} s`,
);
mkdirSync(dirname(timesFile), { recursive: true });
writeFileSync(timesFile, JSON.stringify(lastTimes));
rmSync(countDir, { recursive: true, force: true });
process.exit(results.every((r) => r.ok) ? 0 : 1);
