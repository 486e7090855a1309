// Runs every compiled test file (packages/*/dist/test/**/*.test.js) with Node's test runner.
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

const only = process.argv.slice(2);
const files = [];
for (const pkg of readdirSync('packages')) find(join('packages', pkg, 'dist', 'test'), files);
const selected = only.length ? files.filter((f) => only.some((o) => f.includes(o))) : files;
if (selected.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
const tlsDir = makeTestCa();
const env = { ...process.env, TEST_TLS_DIR: tlsDir, NODE_EXTRA_CA_CERTS: join(tlsDir, 'ca.pem') };
const r = spawnSync(process.execPath, ['--enable-source-maps', '--test', '--test-reporter=spec', ...selected.sort()], { stdio: 'inherit', env });
process.exit(r.status ?? 1);
