// Loaded into every test process (scripts/test.mjs, through NODE_OPTIONS --import): counts the
// calls of node:assert's functions, so the runner can print how many assertions ran and a change
// that makes tests weaker shows as a smaller number. Each process appends its count to the file
// named by TEST_ASSERT_LOG when it exits.
import assert from 'node:assert';
import { appendFileSync } from 'node:fs';

let count = 0;
const skip = new Set(['AssertionError', 'CallTracker', 'strict']);
// Only the strict object's functions are wrapped (the tests use node:assert/strict): node:assert
// compares some of its own functions by identity (match tells itself from doesNotMatch through
// `fn === assert.match`), so the functions of the main object must stay as they are.
const strict = assert.strict;
for (const name of Object.keys(strict)) {
  const fn = strict[name];
  if (typeof fn !== 'function' || skip.has(name)) continue;
  strict[name] = function counted(...args) {
    count++;
    return fn.apply(this, args);
  };
}

const log = process.env.TEST_ASSERT_LOG;
if (log) process.on('exit', () => count > 0 && appendFileSync(log, `${count}\n`));
