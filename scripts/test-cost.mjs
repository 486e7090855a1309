// Measures what each compiled test file costs: runs the files one at a time (in every mode that
// scripts/test.mjs would run them in) under /usr/bin/time and prints wall seconds and CPU seconds
// (user + system, the file's process and every process it started and waited for: servers,
// Chromium, PostgreSQL's and Redis's own work are not counted), most expensive first. The sum of
// the CPU column is the least wall time a run of them can take per core. Arguments filter files by
// substring, TEST_MODES limits the modes, as for scripts/test.mjs.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeTestCa } from './test-ca.mjs';
import { modal, modesFromEnv, testFiles, testNodeOptions } from './test-files.mjs';

const modes = modesFromEnv();
const selected = testFiles(process.argv.slice(2));

const tlsDir = makeTestCa();
const timeFile = join(tmpdir(), `svc-test-cost-${process.pid}`);
const rows = [];
for (const mode of modes) {
  for (const file of mode === modes[0] ? selected : selected.filter(modal)) {
    const env = {
      ...process.env,
      TEST_MODE: mode,
      TEST_TLS_DIR: tlsDir,
      NODE_EXTRA_CA_CERTS: join(tlsDir, 'ca.pem'),
      NODE_OPTIONS: testNodeOptions('lean-test-hook.mjs'),
    };
    const r = spawnSync('/usr/bin/time', ['-f', '%e %U %S', '-o', timeFile, process.execPath, '--test', '--test-reporter=dot', file], {
      env,
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    const [wall, user, sys] = readFileSync(timeFile, 'utf8').trim().split('\n').pop().split(' ').map(Number);
    const row = { mode, file, ok: r.status === 0, wall, cpu: user + sys };
    rows.push(row);
    console.log(
      `${row.ok ? 'ok  ' : 'FAIL'} ${mode.padEnd(10)} ${wall.toFixed(1).padStart(6)} s wall ${row.cpu.toFixed(1).padStart(6)} s cpu  ${file}`,
    );
  }
}
rmSync(timeFile, { force: true });
rows.sort((a, b) => b.cpu - a.cpu);
console.log('\n=== by CPU ===');
for (const r of rows) console.log(`${r.cpu.toFixed(1).padStart(6)} s cpu ${r.wall.toFixed(1).padStart(6)} s wall  ${r.mode.padEnd(10)} ${r.file}`);
const sum = (k) => rows.reduce((n, r) => n + r[k], 0);
console.log(`all: ${rows.length} runs, ${sum('cpu').toFixed(0)} s cpu, ${sum('wall').toFixed(0)} s wall`);
