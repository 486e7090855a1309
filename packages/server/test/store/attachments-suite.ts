/**
 * The attachment part of the storage suite, written once against the Store interface and run for
 * every backend (sqlite.test.ts and postgres.test.ts call it).
 */
import { afterEach, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ATTACHMENT } from '@svc/protocol';
import { id16 } from '@svc/testkit/harness';
import type { AttachmentPart, Store } from '../../src/store/types.js';
import { account, NOW, type StoreFactory } from './suite.js';

const DAY = 24 * 3600 * 1000;
const QUOTA = 1_000_000;

export function attachmentSuite(name: string, factory: StoreFactory): void {
  describe(`store attachments: ${name}`, () => {
    let store: Store;
    beforeEach(async () => {
      store = await factory.make();
    });
    afterEach(async () => {
      await factory.destroy(store);
    });

    const part = (id: string, nick: string, n: number, data: Uint8Array, extra: Partial<AttachmentPart> = {}) =>
      store.putAttachmentPart({ id, nick, n, data, now: NOW, quotaBytes: QUOTA, ...extra });

    test('the first part makes an upload owned by its sender; parts are read back in order from any number on', async () => {
      const id = id16();
      const p = [randomBytes(ATTACHMENT.partBytes), randomBytes(ATTACHMENT.partBytes), randomBytes(7)];
      assert.deepEqual(await part(id, 'ann', 2, p[2]!), { ok: true });
      assert.deepEqual(await part(id, 'ann', 0, p[0]!), { ok: true });
      assert.deepEqual(await part(id, 'ann', 1, p[1]!), { ok: true });
      const rec = (await store.attachment(id))!;
      assert.equal(rec.uploader, 'ann');
      assert.equal(rec.createdAt, NOW);
      assert.equal(rec.finishedAt, null);
      assert.deepEqual(rec.parts, [
        { n: 0, bytes: ATTACHMENT.partBytes },
        { n: 1, bytes: ATTACHMENT.partBytes },
        { n: 2, bytes: 7 },
      ]);
      assert.deepEqual(
        (await store.readAttachmentParts(id, 0, 10)).map((b) => Buffer.from(b)),
        p,
      );
      assert.deepEqual(
        (await store.readAttachmentParts(id, 1, 1)).map((b) => Buffer.from(b)),
        [p[1]],
      );
      assert.deepEqual(await store.readAttachmentParts(id, 3, 10), []);
      assert.equal(await store.attachment(id16()), null);
    });

    test('a part of another account’s upload is attachment_conflict, a part of a finished one attachment_finished; neither changes it', async () => {
      const id = id16();
      await part(id, 'ann', 0, randomBytes(10));
      const v = (await store.attachment(id))!;
      assert.deepEqual(await part(id, 'bob', 0, randomBytes(10)), { error: 'attachment_conflict' });
      assert.deepEqual(await store.attachment(id), v);
      assert.equal(
        await store.finishAttachment({ id, nick: 'ann', version: v.version, size: 10, sha256: randomBytes(32), now: NOW + 5 }),
        'finished',
      );
      const done = (await store.attachment(id))!;
      assert.equal(done.finishedAt, NOW + 5);
      assert.deepEqual(await part(id, 'ann', 1, randomBytes(10)), { error: 'attachment_finished' });
      assert.deepEqual(await store.attachment(id), done);
    });

    test('the quota counts the uploader’s stored bytes, a replaced part once; a refused part stores nothing', async () => {
      const id = id16();
      await part(id, 'ann', 0, randomBytes(600_000));
      assert.deepEqual(await part(id, 'ann', 0, randomBytes(900_000)), { ok: true });
      const before = await store.attachment(id);
      assert.deepEqual(await part(id16(), 'ann', 0, randomBytes(100_001)), { error: 'quota_exceeded' });
      assert.deepEqual(await part(id, 'ann', 1, randomBytes(100_001)), { error: 'quota_exceeded' });
      assert.deepEqual(await store.attachment(id), before);
      assert.deepEqual(await part(id16(), 'bob', 0, randomBytes(100_001)), { ok: true });
      assert.deepEqual(await part(id16(), 'ann', 0, randomBytes(100_000)), { ok: true });
    });

    test('each attachment counts at least one whole part against the quota, so the quota bounds how many there are', async () => {
      const P = ATTACHMENT.partBytes;
      const fit = Math.floor(QUOTA / P);
      const ids = Array.from({ length: fit }, () => id16());
      for (const id of ids) assert.deepEqual(await part(id, 'ann', 0, randomBytes(1)), { ok: true });
      assert.deepEqual(await part(id16(), 'ann', 0, randomBytes(1)), { error: 'quota_exceeded' }, `attachment ${fit + 1} of one byte`);
      // Growing one of them up to a whole part costs nothing more; past it, its bytes count.
      assert.deepEqual(await part(ids[0]!, 'ann', 0, randomBytes(P)), { ok: true });
      const room = QUOTA - fit * P;
      const before = await store.attachment(ids[0]!);
      assert.deepEqual(await part(ids[0]!, 'ann', 1, randomBytes(room + 1)), { error: 'quota_exceeded' });
      assert.deepEqual(await store.attachment(ids[0]!), before, 'a refused part changes nothing');
      assert.deepEqual(await part(ids[0]!, 'ann', 1, randomBytes(room)), { ok: true });
    });

    test('a part that carries its session is written only when the session is the uploader’s; otherwise unauthenticated, and nothing is stored', async () => {
      const ann = account('ann');
      await store.registerAccount(ann);
      await store.registerAccount(account('bob'));
      await store.createSession({ id: 'bob-session', nick: 'bob', now: NOW });
      const id = id16();
      const data = randomBytes(100);
      assert.deepEqual(await part(id, 'ann', 0, data, { session: 'no-such-session' }), { error: 'unauthenticated' });
      assert.deepEqual(await part(id, 'ann', 0, data, { session: 'bob-session' }), { error: 'unauthenticated' });
      assert.equal(await store.attachment(id), null, 'a refused first part makes no upload');
      assert.deepEqual(await part(id, 'ann', 0, data, { session: ann.sessionId }), { ok: true });
      const v = (await store.attachment(id))!;
      await store.deleteSession(ann.sessionId);
      assert.deepEqual(await part(id, 'ann', 1, data, { session: ann.sessionId }), { error: 'unauthenticated' }, 'an ended session');
      assert.deepEqual(await store.attachment(id), v, 'a refused part changes nothing');
    });

    test('a finish at an old version, by another account or of a finished upload changes nothing', async () => {
      const id = id16();
      await part(id, 'ann', 0, randomBytes(10));
      const v = (await store.attachment(id))!.version;
      await part(id, 'ann', 1, randomBytes(10));
      const f = { id, nick: 'ann', version: v, size: 20, sha256: randomBytes(32), now: NOW };
      assert.equal(await store.finishAttachment(f), 'changed');
      const v2 = (await store.attachment(id))!.version;
      assert.equal(await store.finishAttachment({ ...f, nick: 'bob', version: v2 }), 'changed');
      assert.equal((await store.attachment(id))!.finishedAt, null);
      assert.equal(await store.finishAttachment({ ...f, version: v2 }), 'finished');
      const done = (await store.attachment(id))!;
      assert.equal(done.size, 20);
      assert.deepEqual(Buffer.from(done.sha256!), Buffer.from(f.sha256));
      assert.equal(await store.finishAttachment({ ...f, version: v2, size: 99 }), 'changed');
      assert.equal((await store.attachment(id))!.size, 20);
    });

    test('only the uploader deletes an attachment, with its parts; an unknown id is unknown_attachment', async () => {
      const id = id16();
      await part(id, 'ann', 0, randomBytes(10));
      assert.deepEqual(await store.deleteAttachment(id, 'bob'), { error: 'not_uploader' });
      assert.ok(await store.attachment(id));
      assert.deepEqual(await store.deleteAttachment(id, 'ann'), { ok: true });
      assert.equal(await store.attachment(id), null);
      assert.deepEqual(await store.readAttachmentParts(id, 0, 10), []);
      assert.deepEqual(await store.deleteAttachment(id, 'ann'), { error: 'unknown_attachment' });
    });

    test('the purge removes unfinished uploads after a day and finished ones after their time to live, with their parts', async () => {
      const open = id16();
      const fresh = id16();
      const done = id16();
      await part(open, 'ann', 0, randomBytes(10));
      await part(fresh, 'ann', 0, randomBytes(10), { now: NOW + DAY });
      await part(done, 'ann', 0, randomBytes(10));
      const v = (await store.attachment(done))!.version;
      await store.finishAttachment({ id: done, nick: 'ann', version: v, size: 10, sha256: randomBytes(32), now: NOW });
      const r1 = await store.purge(NOW + DAY + 1, { attachmentTtlMs: 3 * DAY });
      assert.equal(r1.attachments, 1);
      assert.equal(await store.attachment(open), null);
      assert.deepEqual(await store.readAttachmentParts(open, 0, 10), []);
      assert.ok(await store.attachment(fresh));
      assert.ok(await store.attachment(done));
      const r2 = await store.purge(NOW + 3 * DAY + 1, { attachmentTtlMs: 3 * DAY });
      assert.equal(r2.attachments, 2);
      assert.equal(await store.attachment(done), null);
      assert.equal(await store.attachment(fresh), null);
      assert.deepEqual(await store.readAttachmentParts(done, 0, 10), []);
    });

    test('stats count the attachments and the bytes of their parts', async () => {
      assert.equal((await store.stats()).attachments, 0);
      await part(id16(), 'ann', 0, randomBytes(10));
      const id = id16();
      await part(id, 'bob', 0, randomBytes(ATTACHMENT.partBytes));
      await part(id, 'bob', 1, randomBytes(5));
      const s = await store.stats();
      assert.equal(s.attachments, 2);
      assert.equal(s.attachmentBytes, 10 + ATTACHMENT.partBytes + 5);
    });
  });
}
