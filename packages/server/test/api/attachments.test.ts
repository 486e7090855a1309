/** The attachment store (docs/API.md, "Attachments") on every backend; with two instances, uploads on one and downloads from the other. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { ATTACHMENT } from '@svc/protocol';
import { assertError, Client, id16, signup, startServer, via, type TestServer } from '@svc/testkit/harness';
import { TEST_MODE } from '@svc/testkit/modes';

const PART = ATTACHMENT.partBytes;
const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64url');
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('base64url');

function split(file: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  for (let i = 0; i < file.length; i += PART) parts.push(file.subarray(i, i + PART));
  return parts;
}

async function putPart(c: Client, id: string, n: number, data: Uint8Array) {
  return c.put(`/api/attachments/${id}/parts/${n}`, { data: b64(data) });
}

async function upload(c: Client, file: Buffer, id = id16()): Promise<string> {
  const parts = split(file);
  for (let n = 0; n < parts.length; n++) assert.equal((await putPart(c, id, n, parts[n]!)).status, 204);
  const r = await c.post(`/api/attachments/${id}/finish`, { parts: parts.length, size: file.length, sha256: sha(file) });
  assert.equal(r.status, 201, r.text);
  return id;
}

/** The rows of the store behind the service, to prove that a refusal changed nothing. */
async function stored(server: TestServer, id: string): Promise<unknown[]> {
  const rows = await server.query(
    `SELECT a.id, a.uploader, a.finished_at, a.size, a.bytes, a.version, p.n, length(p.data) AS len
       FROM attachments a LEFT JOIN attachment_parts p ON p.attachment_id = a.id WHERE a.id = '${id}' ORDER BY p.n`,
  );
  return rows.map((r) => JSON.stringify(r));
}

let server: TestServer;
before(async () => {
  server = await startServer({ ATTACHMENT_MAX_BYTES: String(4 * PART + 100), ATTACHMENT_QUOTA_BYTES: String(6 * PART) });
});
after(async () => {
  await server.close();
});

describe('uploads, finish and download', () => {
  test('an attachment uploaded in parts and finished downloads byte for byte, for any signed-in account holding the id', async () => {
    const a = await signup(server);
    const b = await signup(server);
    const file = randomBytes(2 * PART + 777);
    const id = await upload(a, file);
    // Two instances: the reader asks the other instance than the one the upload ended on.
    for (const reader of [a, b, via(server, b, server.urls.length - 1)]) {
      const r = await reader.get(`/api/attachments/${id}`);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('content-type'), 'application/octet-stream');
      assert.equal(r.headers.get('content-length'), String(file.length));
      assert.equal(r.headers.get('cache-control'), 'no-store');
      assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
      assert.ok(r.bytes.equals(file));
    }
  });

  test('the finish answers 201 {id, size, finishedAt}, and 200 with the same body when sent again with the same values', async () => {
    const a = await signup(server);
    const file = randomBytes(100);
    const id = id16();
    await putPart(a, id, 0, file);
    const t0 = Date.now();
    const first = await a.post(`/api/attachments/${id}/finish`, { parts: 1, size: 100, sha256: sha(file) });
    assert.equal(first.status, 201, first.text);
    assert.deepEqual(Object.keys(first.json).sort(), ['finishedAt', 'id', 'size']);
    assert.equal(first.json.id, id);
    assert.equal(first.json.size, 100);
    assert.ok(first.json.finishedAt >= t0 - 1000 && first.json.finishedAt <= Date.now() + 1000);
    const again = await a.post(`/api/attachments/${id}/finish`, { parts: 1, size: 100, sha256: sha(file) });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.json, first.json);
  });

  test('a part sent again replaces the stored one, so an interrupted upload resumes; parts may come in any order', async () => {
    const a = await signup(server);
    const file = randomBytes(3 * PART);
    const parts = split(file);
    const id = id16();
    assert.equal((await putPart(a, id, 2, parts[2]!)).status, 204);
    assert.equal((await putPart(a, id, 0, randomBytes(PART))).status, 204);
    assert.equal((await putPart(a, id, 0, parts[0]!)).status, 204);
    assert.equal((await putPart(a, id, 1, parts[1]!)).status, 204);
    assert.equal((await putPart(a, id, 1, parts[1]!)).status, 204);
    const r = await a.post(`/api/attachments/${id}/finish`, { parts: 3, size: file.length, sha256: sha(file) });
    assert.equal(r.status, 201, r.text);
    assert.ok((await a.get(`/api/attachments/${id}`)).bytes.equals(file));
  });

  test('Range: bytes=N- answers 206 with the bytes from N on and Content-Range; another range is answered whole', async () => {
    const a = await signup(server);
    const file = randomBytes(2 * PART + 10);
    const id = await upload(a, file);
    for (const from of [1, PART, PART + 5, file.length - 1]) {
      const r = await a.get(`/api/attachments/${id}`, { headers: { range: `bytes=${from}-` } });
      assert.equal(r.status, 206, r.text);
      assert.equal(r.headers.get('content-range'), `bytes ${from}-${file.length - 1}/${file.length}`);
      assert.ok(r.bytes.equals(file.subarray(from)), `from ${from}`);
    }
    for (const range of ['bytes=0-9', 'bytes=-5', `bytes=${file.length}-`, 'lines=1-']) {
      const r = await a.get(`/api/attachments/${id}`, { headers: { range } });
      assert.equal(r.status, 200, range);
      assert.ok(r.bytes.equals(file), range);
    }
  });

  test('GET /api/config tells clients the attachment limits', async () => {
    const r = await (await signup(server)).get('/api/config');
    assert.deepEqual(r.json.attachments, {
      partBytes: PART,
      maxBytes: 4 * PART + 100,
      quotaBytes: 6 * PART,
      uploadBytesPerMin: 200 * 1024 * 1024,
      ttlDays: 30,
    });
  });
});

describe('refusals change nothing', () => {
  test('part shape: data not base64url of 1 to 24,000 bytes is invalid field data; a bad id field id; a bad part number field n', async () => {
    const a = await signup(server);
    const id = id16();
    await putPart(a, id, 0, randomBytes(10));
    const before = await stored(server, id);
    assertError(await a.put(`/api/attachments/${id}/parts/1`, { data: '' }), 400, 'invalid', 'data');
    assertError(await a.put(`/api/attachments/${id}/parts/1`, { data: 'a+b/' }), 400, 'invalid', 'data');
    assertError(await a.put(`/api/attachments/${id}/parts/1`, { data: 7 }), 400, 'invalid', 'data');
    assertError(await a.put(`/api/attachments/${id}/parts/1`, {}), 400, 'invalid', 'data');
    assertError(await putPart(a, id, 1, randomBytes(PART + 1)), 400, 'invalid', 'data');
    assertError(await putPart(a, 'short', 1, randomBytes(5)), 400, 'invalid', 'id');
    for (const n of ['-1', '01', 'x', '1.5', '1e3'])
      assertError(await a.put(`/api/attachments/${id}/parts/${n}`, { data: b64(randomBytes(5)) }), 400, 'invalid', 'n');
    assertError(await a.put(`/api/attachments/${id}/parts/1`, 'nope'), 400, 'bad_json');
    assert.deepEqual(await stored(server, id), before);
  });

  test('a part or a finish on another account’s upload is attachment_conflict; a foreign delete is not_uploader', async () => {
    const a = await signup(server);
    const b = await signup(server);
    const file = randomBytes(50);
    const id = id16();
    await putPart(a, id, 0, file);
    const before = await stored(server, id);
    assertError(await putPart(b, id, 0, randomBytes(50)), 409, 'attachment_conflict');
    assertError(await putPart(b, id, 1, randomBytes(50)), 409, 'attachment_conflict');
    assertError(await b.post(`/api/attachments/${id}/finish`, { parts: 1, size: 50, sha256: sha(file) }), 409, 'attachment_conflict');
    assertError(await b.del(`/api/attachments/${id}`), 403, 'not_uploader');
    assert.deepEqual(await stored(server, id), before);
  });

  test('a part after the finish, or a finish with other values, is attachment_finished', async () => {
    const a = await signup(server);
    const file = randomBytes(PART + 1);
    const id = await upload(a, file);
    const before = await stored(server, id);
    assertError(await putPart(a, id, 0, randomBytes(PART)), 409, 'attachment_finished');
    assertError(await putPart(a, id, 2, randomBytes(5)), 409, 'attachment_finished');
    assertError(await a.post(`/api/attachments/${id}/finish`, { parts: 2, size: PART + 1, sha256: sha(randomBytes(3)) }), 409, 'attachment_finished');
    assert.deepEqual(await stored(server, id), before);
    assert.ok((await a.get(`/api/attachments/${id}`)).bytes.equals(file));
  });

  test('a finish whose part count, part sizes, size or hash do not match the parts is attachment_mismatch, and the upload stays open', async () => {
    const a = await signup(server);
    const file = randomBytes(2 * PART + 3);
    const parts = split(file);
    const id = id16();
    await putPart(a, id, 0, parts[0]!);
    await putPart(a, id, 2, parts[2]!);
    const h = sha(file);
    const before = await stored(server, id);
    assertError(await a.post(`/api/attachments/${id}/finish`, { parts: 3, size: file.length, sha256: h }), 400, 'attachment_mismatch');
    await putPart(a, id, 1, parts[1]!.subarray(1));
    const mid = await stored(server, id);
    assert.notDeepEqual(mid, before);
    assertError(await a.post(`/api/attachments/${id}/finish`, { parts: 3, size: file.length - 1, sha256: h }), 400, 'attachment_mismatch');
    await putPart(a, id, 1, parts[1]!);
    const full = await stored(server, id);
    assertError(await a.post(`/api/attachments/${id}/finish`, { parts: 2, size: 2 * PART, sha256: h }), 400, 'attachment_mismatch');
    assertError(await a.post(`/api/attachments/${id}/finish`, { parts: 3, size: file.length + 1, sha256: h }), 400, 'attachment_mismatch');
    assertError(
      await a.post(`/api/attachments/${id}/finish`, { parts: 3, size: file.length, sha256: sha(randomBytes(4)) }),
      400,
      'attachment_mismatch',
    );
    assert.deepEqual(await stored(server, id), full);
    assertError(await a.get(`/api/attachments/${id}`), 404, 'unknown_attachment');
    assert.equal((await a.post(`/api/attachments/${id}/finish`, { parts: 3, size: file.length, sha256: h })).status, 201);
  });

  test('finish shape: parts, size and sha256 checked in this order; an unknown id is unknown_attachment', async () => {
    const a = await signup(server);
    const id = id16();
    const h = sha(randomBytes(5));
    assertError(await a.post(`/api/attachments/${id}/finish`, { parts: 0, size: 5, sha256: 'x' }), 400, 'invalid', 'parts');
    assertError(await a.post(`/api/attachments/${id}/finish`, { parts: 1.5, size: 5, sha256: h }), 400, 'invalid', 'parts');
    assertError(await a.post(`/api/attachments/${id}/finish`, { parts: 1, size: '5', sha256: 'x' }), 400, 'invalid', 'size');
    assertError(await a.post(`/api/attachments/${id}/finish`, { parts: 1, size: 5, sha256: b64(randomBytes(31)) }), 400, 'invalid', 'sha256');
    assertError(await a.post(`/api/attachments/bad/finish`, { parts: 1, size: 5, sha256: h }), 400, 'invalid', 'id');
    assertError(await a.post(`/api/attachments/${id}/finish`, { parts: 1, size: 5, sha256: h }), 404, 'unknown_attachment');
  });

  test('a part ending past ATTACHMENT_MAX_BYTES, or a finish stating more, is file_too_large', async () => {
    const a = await signup(server);
    const id = id16();
    await putPart(a, id, 0, randomBytes(PART));
    const before = await stored(server, id);
    assertError(await putPart(a, id, 4, randomBytes(101)), 413, 'file_too_large');
    assertError(await putPart(a, id, 5, randomBytes(1)), 413, 'file_too_large');
    assertError(
      await a.post(`/api/attachments/${id}/finish`, { parts: 5, size: 4 * PART + 101, sha256: sha(randomBytes(1)) }),
      413,
      'file_too_large',
    );
    assert.deepEqual(await stored(server, id), before);
    assert.equal((await putPart(a, id, 4, randomBytes(100))).status, 204);
  });

  test('parts past the account’s quota are quota_exceeded; a replaced part counts once; deleting frees the room', async () => {
    const a = await signup(server);
    const first = await upload(a, randomBytes(4 * PART));
    const id = id16();
    await putPart(a, id, 0, randomBytes(PART));
    await putPart(a, id, 1, randomBytes(PART));
    assert.equal((await putPart(a, id, 1, randomBytes(PART))).status, 204, 'a replaced part is not counted twice');
    const before = await stored(server, id);
    assertError(await putPart(a, id, 2, randomBytes(1)), 413, 'quota_exceeded');
    assert.deepEqual(await stored(server, id), before);
    assert.equal((await putPart(await signup(server), id16(), 0, randomBytes(PART))).status, 204, 'another account has its own quota');
    assert.equal((await a.del(`/api/attachments/${first}`)).status, 204);
    assert.equal((await putPart(a, id, 2, randomBytes(1))).status, 204);
  });

  test('download: a bad id is invalid field id; unknown, unfinished and deleted attachments are unknown_attachment', async () => {
    const a = await signup(server);
    assertError(await a.get('/api/attachments/nope'), 400, 'invalid', 'id');
    assertError(await a.get(`/api/attachments/${id16()}`), 404, 'unknown_attachment');
    const open = id16();
    await putPart(a, open, 0, randomBytes(5));
    assertError(await a.get(`/api/attachments/${open}`), 404, 'unknown_attachment');
    const id = await upload(a, randomBytes(5));
    assert.equal((await a.del(`/api/attachments/${id}`)).status, 204);
    assertError(await a.get(`/api/attachments/${id}`), 404, 'unknown_attachment');
    assertError(await a.del(`/api/attachments/${id}`), 404, 'unknown_attachment');
    assertError(await a.del('/api/attachments/x'), 400, 'invalid', 'id');
    assert.deepEqual(await stored(server, id), []);
  });

  test('a file served lately from memory is refused as soon as it is deleted or purged, through any instance', async () => {
    const a = await signup(server);
    const b = await signup(server);
    const other = via(server, b, server.urls.length - 1);
    const file = randomBytes(2 * PART + 9);
    const id = await upload(a, file);
    for (const reader of [a, other]) assert.ok((await reader.get(`/api/attachments/${id}`)).bytes.equals(file));
    assert.equal((await a.del(`/api/attachments/${id}`)).status, 204);
    for (const reader of [a, b, other]) assertError(await reader.get(`/api/attachments/${id}`), 404, 'unknown_attachment');
    // Purged by another instance's purge: the rows go from under this one (a shared database
    // only; the SQLite file is written by its one service alone).
    if (TEST_MODE === 'sqlite') return;
    const kept = await upload(a, file);
    assert.ok((await other.get(`/api/attachments/${kept}`)).bytes.equals(file));
    await server.query(`DELETE FROM attachment_parts WHERE attachment_id = '${kept}' RETURNING n`);
    await server.query(`DELETE FROM attachments WHERE id = '${kept}' RETURNING id`);
    for (const reader of [a, other]) assertError(await reader.get(`/api/attachments/${kept}`), 404, 'unknown_attachment');
  });

  test('every attachment route needs a session (401 before anything else)', async () => {
    const anon = new Client(server);
    const id = id16();
    assertError(await anon.put(`/api/attachments/${id}/parts/0`, { data: 'AAAA' }), 401, 'unauthenticated');
    assertError(await anon.post(`/api/attachments/${id}/finish`, { parts: 1, size: 3, sha256: sha(randomBytes(1)) }), 401, 'unauthenticated');
    assertError(await anon.get(`/api/attachments/${id}`), 401, 'unauthenticated');
    assertError(await anon.del(`/api/attachments/${id}`), 401, 'unauthenticated');
  });
});

describe('limits and the switch', () => {
  test('parts past LIMIT_UPLOAD_BYTES_PER_MIN (counted in whole parts) are rate_limited with Retry-After, and store nothing', async () => {
    const limited = await startServer({ LIMIT_UPLOAD_BYTES_PER_MIN: String(2 * PART + 5) });
    try {
      const a = await signup(limited);
      const id = id16();
      assert.equal((await putPart(a, id, 0, randomBytes(10))).status, 204);
      assert.equal((await putPart(a, id, 1, randomBytes(10))).status, 204);
      const r = await putPart(a, id, 2, randomBytes(10));
      assertError(r, 429, 'rate_limited');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
      assert.equal((await stored(limited, id)).length, 2);
      // The limit is the account's: another account uploads meanwhile.
      assert.equal((await putPart(await signup(limited), id16(), 0, randomBytes(10))).status, 204);
    } finally {
      await limited.close();
    }
  });

  test('parts do not count against the write limit', async () => {
    const limited = await startServer({ LIMIT_WRITES_PER_MIN: '2' });
    try {
      const a = await signup(limited);
      const id = id16();
      for (let n = 0; n < 5; n++) assert.equal((await putPart(a, id, n, randomBytes(PART))).status, 204);
    } finally {
      await limited.close();
    }
  });

  test('ATTACHMENTS=off removes the routes: each answers 404 not_found, and /api/config says attachments null', async () => {
    const off = await startServer({ ATTACHMENTS: 'off' });
    try {
      const a = await signup(off);
      const id = id16();
      assertError(await putPart(a, id, 0, randomBytes(5)), 404, 'not_found');
      assertError(await a.post(`/api/attachments/${id}/finish`, { parts: 1, size: 5, sha256: sha(randomBytes(5)) }), 404, 'not_found');
      assertError(await a.get(`/api/attachments/${id}`), 404, 'not_found');
      assertError(await a.del(`/api/attachments/${id}`), 404, 'not_found');
      assert.equal((await a.get('/api/config')).json.attachments, null);
    } finally {
      await off.close();
    }
  });
});
