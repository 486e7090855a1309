/**
 * Uploads that do not go through at once: cut by the network, they resume from the parts the
 * service acknowledged and finish once; with the progress lost, they start over under the same id
 * and key and the service's finished copy answers; under the service's upload limit they wait
 * instead of causing a 429, and a 429 they could not foresee (another device of the account) is
 * waited out for its Retry-After.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ATTACHMENT } from '@svc/protocol';
import { chunkCount, downloadBytes, isSdkError, MemoryUploadProgress, UPLOAD_IN_FLIGHT, Uploader, type FetchLike } from '../src/index.js';
import { loginDevice, register, startServer, type TestServer } from './server.js';

/** A fetch that can go offline after `partsBefore` more parts, and records every attachment request and its status. */
function net() {
  const log: { what: string; status: number }[] = [];
  const state = { offlineAfter: Infinity, parts: 0 };
  const wrap =
    (f: FetchLike): FetchLike =>
    async (url, init) => {
      const path = new URL(url).pathname;
      const what = `${init?.method ?? 'GET'} ${path.replace(/\/api\/attachments\/[^/]+/, '/att')}`;
      if (path.startsWith('/api/attachments/') && what.startsWith('PUT') && state.parts++ >= state.offlineAfter) throw new TypeError('fetch failed');
      const res = await f(url, init);
      if (path.startsWith('/api/attachments/')) log.push({ what, status: res.status });
      return res;
    };
  return { log, state, wrap };
}

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

test('an upload cut by the network resumes from the acknowledged parts and finishes once', async () => {
  const n = net();
  const alice = await register(server, undefined, undefined, { wrap: n.wrap });
  const bob = await register(server);
  const progress = new MemoryUploadProgress();
  const file = new Uint8Array(randomBytes(500_000));
  const parts = chunkCount(file.length);
  const up = new Uploader(alice.api, progress);
  const s = await up.begin(file.length);
  n.state.offlineAfter = 13;
  await assert.rejects(up.run(s, file), (e: unknown) => isSdkError(e, 'network'));
  const saved = await progress.get(s.id);
  assert.equal(saved?.done, 13, 'the progress holds the 13 parts answered before the cut');

  // A reload: a new Uploader over the same progress store, the network back.
  n.state.offlineAfter = Infinity;
  const again = new Uploader(alice.api, progress);
  const done = await again.run(await again.resume(s.id, s.key, file.length), file);
  const puts = n.log.filter((l) => l.what.startsWith('PUT'));
  assert.equal(puts.length, 13 + (parts - 13), 'after the cut only the parts not answered went');
  assert.deepEqual(
    n.log.filter((l) => l.what.endsWith('/finish')),
    [{ what: 'POST /att/finish', status: 201 }],
    'finished once',
  );
  assert.equal(await progress.get(s.id), undefined, 'the progress is forgotten once finished');
  const rows = await server.query(`SELECT size FROM attachments WHERE id = '${s.id}'`);
  assert.deepEqual(rows, [{ size: done.size }]);
  assert.ok(Buffer.from(await downloadBytes(bob.api, done)).equals(Buffer.from(file)));
});

test('an upload keeps four parts in flight, never more, and its progress records only the parts up to the first unanswered one', async () => {
  let now = 0;
  let most = 0;
  const order: number[] = [];
  /** Part 2's first try is cut by the network once parts 3 and 4 were answered. */
  const later: (() => void)[] = [];
  let cut = true;
  // The service answers no part after the first until four are in flight, so the test sees the
  // most the uploader sends at once however fast the machine answers (it hangs if fewer ever go).
  let full = false;
  /** Whether a later part started before the first was answered (it must go alone). */
  let early = false;
  let firstAnswered = false;
  let fill!: () => void;
  const filled = new Promise<void>((resolve) => (fill = resolve));
  const wrap =
    (f: FetchLike): FetchLike =>
    async (url, init) => {
      const m = /\/parts\/(\d+)$/.exec(new URL(url).pathname);
      if (!m || init?.method !== 'PUT') return f(url, init);
      const part = Number(m[1]);
      most = Math.max(most, ++now);
      if (part > 0 && !firstAnswered) early = true;
      try {
        if (part > 0 && !full) {
          if (now >= UPLOAD_IN_FLIGHT) {
            full = true;
            fill();
          } else await filled;
        }
        if (part === 2 && cut) {
          cut = false;
          await new Promise<void>((resolve) => later.push(resolve));
          throw new TypeError('fetch failed');
        }
        const res = await f(url, init);
        order.push(part);
        if (part === 0) firstAnswered = true;
        if (part === 4) for (const go of later.splice(0)) go();
        return res;
      } finally {
        now--;
      }
    };
  const alice = await register(server, undefined, undefined, { wrap });
  const bob = await register(server);
  const progress = new MemoryUploadProgress();
  const file = new Uint8Array(randomBytes(300_000));
  const parts = chunkCount(file.length);
  const up = new Uploader(alice.api, progress);
  const s = await up.begin(file.length);
  await assert.rejects(up.run(s, file), (e: unknown) => isSdkError(e, 'network'));
  assert.equal(most, UPLOAD_IN_FLIGHT, 'four parts were in flight at once');
  assert.equal(order[0], 0, 'the first part was answered first');
  assert.equal(early, false, 'the first part went alone');
  assert.ok(order.includes(3) && order.includes(4), 'parts after the cut one were answered');
  assert.equal((await progress.get(s.id))?.done, 2, 'the progress stops at the first part not answered');

  order.length = 0;
  most = 0;
  const done = await new Uploader(alice.api, progress).run(await up.resume(s.id, s.key, file.length), file);
  assert.deepEqual(
    [...order].sort((a, b) => a - b),
    Array.from({ length: parts - 2 }, (_, i) => i + 2),
    'the resume sent every part from the first unanswered one',
  );
  assert.ok(most <= UPLOAD_IN_FLIGHT);
  assert.ok(Buffer.from(await downloadBytes(bob.api, done)).equals(Buffer.from(file)));
});

test('an upload whose progress was lost after it finished starts over and the finish answers the same', async () => {
  const n = net();
  const alice = await register(server, undefined, undefined, { wrap: n.wrap });
  const file = new Uint8Array(randomBytes(100_000));
  const up = new Uploader(alice.api);
  const s = await up.begin(file.length);
  const first = await up.run({ ...s }, file);
  n.log.length = 0;
  const second = await new Uploader(alice.api).run({ ...s, done: 0 }, file);
  assert.deepEqual(second, first);
  assert.deepEqual(n.log, [
    { what: 'PUT /att/parts/0', status: 409 },
    { what: 'POST /att/finish', status: 200 },
  ]);
});

test('under the service upload limit the uploader waits instead of causing a 429', async () => {
  const limited = await startServer({ LIMIT_UPLOAD_BYTES_PER_MIN: String(4 * ATTACHMENT.partBytes) });
  try {
    const n = net();
    const alice = await register(limited, undefined, undefined, { wrap: n.wrap });
    const up = new Uploader(alice.api);
    const four = new Uint8Array(randomBytes(80_000));
    assert.equal(chunkCount(four.length), 4);
    await up.run(await up.begin(four.length), four);
    const waits: [number, string][] = [];
    const ctrl = new AbortController();
    const one = new Uint8Array(10);
    const next = up.run(await up.begin(one.length), one, {
      signal: ctrl.signal,
      onWait: (ms, why) => {
        waits.push([ms, why]);
        ctrl.abort();
      },
    });
    await assert.rejects(next, (e: unknown) => (e as Error).name === 'AbortError');
    assert.equal(waits.length, 1);
    assert.equal(waits[0]![1], 'pacing');
    assert.ok(waits[0]![0] > 55_000 && waits[0]![0] <= 61_000, `waits about a minute (${waits[0]![0]} ms)`);
    assert.equal(n.log.filter((l) => l.status === 429).length, 0, 'no 429');
    assert.equal(n.log.filter((l) => l.what.startsWith('PUT')).length, 4, 'the fifth part was not sent');

    // Another device of the account used the budget: the 429 is waited out, for its Retry-After.
    const carol = await register(limited);
    const other = await loginDevice(limited, carol.m.nick, carol.password, 'dev-other');
    const otherUp = new Uploader(other.api);
    await otherUp.run(await otherUp.begin(four.length), four);
    const m = net();
    const carol2 = await loginDevice(limited, carol.m.nick, carol.password, 'dev-carol-2', { wrap: m.wrap });
    const up2 = new Uploader(carol2.api);
    const ctrl2 = new AbortController();
    const told: [number, string][] = [];
    const late = up2.run(await up2.begin(one.length), one, {
      signal: ctrl2.signal,
      onWait: (ms, why) => {
        told.push([ms, why]);
        if (why === 'rate_limited') setTimeout(() => ctrl2.abort(), 300);
      },
    });
    await assert.rejects(late, (e: unknown) => (e as Error).name === 'AbortError');
    assert.equal(told[0]![1], 'rate_limited');
    assert.ok(told[0]![0] >= 50_000, `waits its Retry-After (${told[0]![0]} ms)`);
    assert.deepEqual(
      m.log.map((l) => l.status),
      [429],
      'one 429, and nothing sent while waiting',
    );
  } finally {
    await limited.close();
  }
});
