/**
 * The PostgreSQL store's send batches (store/postgres/send-batch.ts): when the next batch starts.
 * The database is replaced by functions that record each batch, and the clock by node:test's
 * mock timers, so "at once" and "after HOLD_MS" are exact, not timed.
 */
import { afterEach, beforeEach, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { HOLD_MS, SMALL_BATCH, SendBatcher } from '../../src/store/postgres/send-batch.js';
import type { PendingSend, SendOutcome } from '../../src/store/postgres/messages.js';
import type { SendInput, SendResult } from '../../src/store/types.js';

const RESULT = { status: 'queued' } as unknown as SendResult;

/** A batcher whose batches only note their size: `one` for a lone send, the count for a batch. */
function recordingBatcher(): { batcher: SendBatcher; started: (number | 'one')[] } {
  const started: (number | 'one')[] = [];
  const batcher = new SendBatcher(
    async (sends: PendingSend[]): Promise<SendOutcome[]> => {
      started.push(sends.length);
      return sends.map(() => ({ result: RESULT }));
    },
    async (): Promise<SendOutcome> => {
      started.push('one');
      return { result: RESULT };
    },
  );
  return { batcher, started };
}

const send = (n: number): SendInput => ({ id: `id${n}` }) as unknown as SendInput;

/** Moves the mocked clock by `ms` and lets every callback and promise due by then run. */
async function advance(ms: number): Promise<void> {
  mock.timers.tick(ms);
  for (let i = 0; i < 5; i++) {
    for (let j = 0; j < 20; j++) await Promise.resolve();
    mock.timers.tick(0);
  }
}

beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setImmediate'] }));
afterEach(() => mock.timers.reset());

test('a lone send goes out at once', async () => {
  const { batcher, started } = recordingBatcher();
  const answer = batcher.send(send(1));
  await advance(0);
  assert.deepEqual(started, ['one']);
  assert.equal(await answer, RESULT);
});

test(`after a batch of fewer than ${SMALL_BATCH} sends the next starts ${HOLD_MS} ms after it ended, with every send that came meanwhile`, async () => {
  const { batcher, started } = recordingBatcher();
  await Promise.all([batcher.send(send(1)), advance(0)]);
  assert.deepEqual(started, ['one']);
  const later = [batcher.send(send(2)), batcher.send(send(3))];
  await advance(0);
  await advance(HOLD_MS - 1);
  assert.deepEqual(started, ['one'], 'held until HOLD_MS after the last batch ended');
  await advance(1);
  assert.deepEqual(started, ['one', 2], 'then the sends that came meanwhile go as one batch');
  assert.deepEqual(await Promise.all(later), [RESULT, RESULT]);
});

test(`after a batch of ${SMALL_BATCH} sends or more the next starts at once`, async () => {
  const { batcher, started } = recordingBatcher();
  const first = Array.from({ length: SMALL_BATCH }, (_, i) => batcher.send(send(i)));
  await advance(0);
  assert.deepEqual(started, [SMALL_BATCH]);
  await Promise.all(first);
  const next = batcher.send(send(99));
  await advance(0);
  assert.deepEqual(started, [SMALL_BATCH, 'one'], 'no time passed, and the next send is out');
  assert.equal(await next, RESULT);
});

test('a send that comes once the hold is over goes out at once', async () => {
  const { batcher, started } = recordingBatcher();
  await Promise.all([batcher.send(send(1)), advance(0)]);
  await advance(HOLD_MS);
  const next = batcher.send(send(2));
  await advance(0);
  assert.deepEqual(started, ['one', 'one']);
  assert.equal(await next, RESULT);
});
