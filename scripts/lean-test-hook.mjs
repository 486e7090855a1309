// Loaded into every test process (scripts/test.mjs, through NODE_OPTIONS --import), before
// node:test sets itself up. Node's test runner (20 and 24 alike) enables an async hook with `init` and `destroy`
// callbacks to tell which test an uncaught error came from. A `destroy` callback makes V8 track the
// end of every promise, and every promise of the process pays for it: 0.98 µs to make one inside a
// test against 0.08 µs outside, a large part of the CPU of the suites that run a server in the
// test process (messages-ack: 2.2-2.6 -> 1.8 s of CPU).
//
// Here the runner's hook gets its `init` only, and that only for resources other than promises
// (timers, sockets, the tests themselves), so the map it fills stays small without `destroy`.
// What is given up is naming the test in the report of an uncaught error raised after an `await`:
// the runner then reports it at the top level and still fails the file (exit code 1), so no
// failure goes unnoticed. Any other async hook is left exactly as asked for.
import asyncHooks from 'node:async_hooks';

const createHook = asyncHooks.createHook;
asyncHooks.createHook = function leanCreateHook(callbacks) {
  const fromTestRunner = /internal\/test_runner\//.test(new Error().stack ?? '');
  if (!fromTestRunner || typeof callbacks?.init !== 'function' || typeof callbacks.destroy !== 'function') {
    return createHook.call(this, callbacks);
  }
  const init = callbacks.init;
  return createHook.call(this, {
    init(asyncId, type, triggerAsyncId, resource) {
      if (type !== 'PROMISE') init(asyncId, type, triggerAsyncId, resource);
    },
  });
};
