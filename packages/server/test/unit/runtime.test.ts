import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runtimeWarning } from '../../src/runtime.js';

test('Node.js 24 and 22.13 or newer are supported runtimes: no warning at start', () => {
  for (const v of ['v24.0.0', 'v24.22.3', 'v25.1.0', 'v22.13.0', 'v22.23.5']) assert.equal(runtimeWarning(v), null, v);
});

test('an end-of-life or too old Node.js is named in a warning that points at Node.js 24 LTS', () => {
  for (const v of ['v20.20.2', 'v18.20.0', 'v22.12.0', 'v23.11.0']) {
    const w = runtimeWarning(v);
    assert.ok(w?.includes(v) && w.includes('Node.js 24 LTS'), `${v}: ${w}`);
  }
});
