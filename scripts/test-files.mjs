// Which compiled test files a run takes, and in which modes: shared by scripts/test.mjs (the
// runner) and scripts/test-cost.mjs (the cost of each file).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The backend modes (packages/testkit/src/modes.ts): SQLite; PostgreSQL + Redis; two instances on them. */
export const ALL_MODES = ['sqlite', 'postgres', 'postgres-2'];

/** TEST_MODES (comma-separated), or every mode; an unknown one ends the process with a message. */
export function modesFromEnv() {
  const modes = (process.env.TEST_MODES || ALL_MODES.join(',')).split(',').filter(Boolean);
  for (const m of modes) {
    if (!ALL_MODES.includes(m)) {
      console.error(`TEST_MODES: unknown mode ${m} (known: ${ALL_MODES.join(', ')})`);
      process.exit(2);
    }
  }
  return modes;
}

function find(dir, out) {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) find(p, out);
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

/**
 * Every packages/*\/dist/test/**\/*.test.js and packages/*\/dist/node/**\/*.test.js (the web app's
 * unit tests in Node), sorted; with `only`, those whose path contains one of its strings.
 */
export function testFiles(only = []) {
  const files = [];
  for (const pkg of readdirSync('packages')) {
    find(join('packages', pkg, 'dist', 'test'), files);
    find(join('packages', pkg, 'dist', 'node'), files);
  }
  return (only.length ? files.filter((f) => only.some((o) => f.includes(o))) : files).sort();
}

/** Suites that talk to the service through HTTP and so depend on the backend mode: they run in every mode, the rest in the first only. */
export const modal = (f) => /packages[\\/]server[\\/]dist[\\/]test[\\/](api|push)[\\/]/.test(f);

/** The browser suites. */
export const browser = (f) => /packages[\\/]web[\\/]dist[\\/]test[\\/]/.test(f);

/** The command line's suites, which start its program as child processes. */
export const commandLine = (f) => /packages[\\/]cli[\\/]dist[\\/]test[\\/]/.test(f);

/**
 * NODE_OPTIONS for a test process: the caller's, then each of these scripts/ modules loaded first
 * (--import), e.g. lean-test-hook.mjs, which every run of the tests loads.
 */
export function testNodeOptions(...modules) {
  const here = dirname(fileURLToPath(import.meta.url));
  return [process.env.NODE_OPTIONS ?? '', ...modules.map((m) => `--import=${pathToFileURL(join(here, m)).href}`)].join(' ').trim();
}
