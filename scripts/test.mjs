// Runs every compiled test file (packages/*/dist/test/**/*.test.js) with Node's test runner.
// The server's API and push suites run once per backend mode (TEST_MODE, see
// packages/server/test/modes.ts): SQLite; PostgreSQL + Redis; two instances on PostgreSQL + Redis.
// Arguments filter files by substring; TEST_MODES=sqlite,postgres limits the modes.
import { readdirSync, statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { makeTestCa } from './test-ca.mjs';

function find(dir, out) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) find(p, out);
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

const ALL_MODES = ['sqlite', 'postgres', 'postgres-2'];
const modes = (process.env.TEST_MODES || ALL_MODES.join(',')).split(',').filter(Boolean);
for (const m of modes) {
  if (!ALL_MODES.includes(m)) {
    console.error(`TEST_MODES: unknown mode ${m} (known: ${ALL_MODES.join(', ')})`);
    process.exit(2);
  }
}

const only = process.argv.slice(2);
const files = [];
for (const pkg of readdirSync('packages')) find(join('packages', pkg, 'dist', 'test'), files);
const selected = (only.length ? files.filter((f) => only.some((o) => f.includes(o))) : files).sort();
if (selected.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
// Suites that talk to the service through HTTP and so depend on the backend mode.
const modal = (f) => /packages[\\/]server[\\/]dist[\\/]test[\\/](api|push)[\\/]/.test(f);

const tlsDir = makeTestCa();
const baseEnv = { ...process.env, TEST_TLS_DIR: tlsDir, NODE_EXTRA_CA_CERTS: join(tlsDir, 'ca.pem') };
// The browser suites spend most of their time waiting (for the other browser, for the message
// budget of a minute), each on its own server and browser: they run several files at a time.
const browser = (f) => /packages[\\/]web[\\/]dist[\\/]test[\\/]/.test(f);
const webConcurrency = Math.max(1, Number(process.env.TEST_WEB_CONCURRENCY || 3));
const runs = [];
for (const mode of modes) {
  const batch = mode === modes[0] ? selected : selected.filter(modal);
  const rest = batch.filter((f) => !browser(f));
  const web = batch.filter(browser);
  if (rest.length > 0) runs.push({ mode, batch: rest, flags: [] });
  if (web.length > 0) runs.push({ mode, batch: web, flags: [`--test-concurrency=${webConcurrency}`] });
}
let failed = false;
for (const { mode, batch, flags } of runs) {
  console.log(`\n=== TEST_MODE=${mode}: ${batch.length} files ${flags.join(' ')} ===\n`);
  const r = spawnSync(process.execPath, ['--enable-source-maps', '--test', ...flags, '--test-reporter=spec', ...batch], {
    stdio: 'inherit',
    env: { ...baseEnv, TEST_MODE: mode },
  });
  if (r.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
