/**
 * A download is checked against its message and refused with a clear error when anything does not
 * match: a part altered or swapped in the service's store, a download cut short, a wrong hash, a
 * wrong key. A cut connection resumes with Range instead; a file the service no longer has says
 * "File no longer available". The piece that ends the file is never handed out when a check fails.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeBehindService } from '@svc/testkit/harness';
import { downloadFile, isSdkError, Uploader, type FetchLike, type FileRef, type UploadedFile } from '../src/index.js';
import { register, startServer, type Device, type TestServer } from './server.js';

let server: TestServer;
let alice: Device;
let bob: Device;
before(async () => {
  // Parts are altered in the store behind the service, as a hostile service would serve them; a
  // file the service kept in memory since its finish would be served as it was uploaded.
  server = await startServer({ ATTACHMENT_CACHE_BYTES: '0' });
  alice = await register(server);
  bob = await register(server);
});
after(async () => {
  await server.close();
});

/** Three parts: two full ones and a short last one. */
async function uploadThree(): Promise<{ file: Uint8Array; done: UploadedFile }> {
  const file = new Uint8Array(randomBytes(60_000));
  const up = new Uploader(alice.api);
  return { file, done: await up.run(await up.begin(file.length), file) };
}

/** Downloads with `d`; returns how many plaintext bytes came out, and the error. */
async function attempt(d: Device, ref: FileRef, retries?: number): Promise<{ got: number; error: unknown }> {
  let got = 0;
  try {
    for await (const p of downloadFile(d.api, ref, retries !== undefined ? { retries } : {})) got += p.length;
  } catch (error) {
    return { got, error };
  }
  return { got, error: undefined };
}

function refused(r: { got: number; error: unknown }, file: Uint8Array, why: RegExp): void {
  assert.ok(isSdkError(r.error, 'attachment_corrupt'), `refused as corrupt: ${String(r.error)}`);
  assert.match((r.error as Error).message, why);
  assert.ok(r.got < file.length, 'the whole file was never handed out');
}

const partOf = async (id: string, n: number): Promise<Buffer> =>
  (await server.query(`SELECT data FROM attachment_parts WHERE attachment_id = '${id}' AND n = ${n}`))[0]!.data as Buffer;

test('a part altered in the store is refused: its tag fails', async () => {
  const { file, done } = await uploadThree();
  const part = Buffer.from(await partOf(done.id, 1));
  part[500]! ^= 0x40;
  await writeBehindService(server.dbPath, 'UPDATE attachment_parts SET data = ? WHERE attachment_id = ? AND n = 1', [part, done.id]);
  refused(await attempt(bob, done), file, /part 1 failed its tag/);
});

test('two parts swapped in the store are refused: each is bound to its place', async () => {
  const { file, done } = await uploadThree();
  const [p0, p1] = [await partOf(done.id, 0), await partOf(done.id, 1)];
  await writeBehindService(server.dbPath, 'UPDATE attachment_parts SET data = ? WHERE attachment_id = ? AND n = 0', [p1, done.id]);
  await writeBehindService(server.dbPath, 'UPDATE attachment_parts SET data = ? WHERE attachment_id = ? AND n = 1', [p0, done.id]);
  const r = await attempt(bob, done);
  refused(r, file, /part 0 failed its tag/);
  assert.equal(r.got, 0);
});

test('a wrong hash in the message is refused after the last part, whose bytes are held back', async () => {
  const { file, done } = await uploadThree();
  const r = await attempt(bob, { ...done, sha256: Buffer.alloc(32).toString('base64url') });
  refused(r, file, /SHA-256/);
  assert.equal(r.got, 2 * 23_984, 'the two full parts came out, the last did not');
});

test('a wrong key is refused at the first part', async () => {
  const { file, done } = await uploadThree();
  refused(await attempt(bob, { ...done, key: Buffer.alloc(32, 1).toString('base64url') }), file, /part 0 failed its tag/);
});

test('a size in the message that does not match its plainSize is refused before any request', async () => {
  const { file, done } = await uploadThree();
  const before = bob.requests.length;
  refused(await attempt(bob, { ...done, size: done.size + 16 }), file, /sizes do not agree/);
  assert.equal(bob.requests.length, before);
});

/** A device whose downloads pass through `shape`, as a proxy or a hostile service could shape them. */
async function through(shape: (res: Response, init: RequestInit | undefined) => Response): Promise<{ d: Device; ranges: string[] }> {
  const ranges: string[] = [];
  const wrap =
    (f: FetchLike): FetchLike =>
    async (url, init) => {
      const res = await f(url, init);
      if ((init?.method ?? 'GET') !== 'GET' || !url.includes('/api/attachments/')) return res;
      ranges.push(new Headers(init?.headers).get('range') ?? '');
      return shape(res, init);
    };
  return { d: await register(server, undefined, undefined, { wrap }), ranges };
}

/** The body cut after `n` bytes: an error (a dropped connection) or a clean early end. */
function cut(res: Response, n: number, how: 'error' | 'end', headers?: Headers): Response {
  const reader = res.body!.getReader();
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(c) {
      const { value, done } = await reader.read();
      if (done || sent >= n) {
        await reader.cancel();
        return how === 'error' && sent >= n ? c.error(new TypeError('terminated')) : c.close();
      }
      const v = value.subarray(0, n - sent);
      sent += v.length;
      c.enqueue(v);
    },
  });
  return new Response(body, { status: res.status, headers: headers ?? res.headers });
}

test('a download cut mid-way resumes with Range from the byte it stopped at, and the file comes whole', async () => {
  const { file, done } = await uploadThree();
  let first = true;
  const { d, ranges } = await through((res) => {
    if (!first) return res;
    first = false;
    return cut(res, 30_000, 'error');
  });
  const parts: Uint8Array[] = [];
  for await (const p of downloadFile(d.api, done)) parts.push(p);
  assert.ok(Buffer.concat(parts).equals(Buffer.from(file)));
  assert.deepEqual(ranges, ['', 'bytes=30000-']);
});

test('a download that keeps ending early is refused as truncated', async () => {
  const { file, done } = await uploadThree();
  const { d } = await through((res) => cut(res, 0, 'end'));
  const r = await attempt(d, done, 1);
  refused(r, file, /kept ending before the whole file came/);
});

test('a shortened file served as if whole (a fitting Content-Length) is refused on its size', async () => {
  const { file, done } = await uploadThree();
  const { d } = await through((res) => cut(res, 24_000, 'end', new Headers({ 'content-length': '24000' })));
  refused(await attempt(d, done), file, /holds 24000 bytes, the message says/);
});

test('an attachment deleted by its uploader is "File no longer available"', async () => {
  const { done } = await uploadThree();
  await alice.api.deleteAttachment(done.id);
  const r = await attempt(bob, done);
  assert.ok(isSdkError(r.error, 'unknown_attachment'));
  assert.equal((r.error as Error).message, 'File no longer available.');
});
