/**
 * Sends on a session this instance remembers (http/remembered-sessions.ts): they skip the
 * per-request lookup, and the send's own reads confirm the session and X-Device, so an ended
 * session or a deleted device is refused by the next send on every instance, whatever this
 * instance remembers, and the session check's 401 still comes before every other answer.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, via, dmBody, id16, instance, startServer, userWithDevices, ulid, type TestServer } from '@svc/testkit/harness';
import { spyQueries } from '@svc/testkit/postgres';
import { StateReader } from '../reliability/snapshot.js';

/** The names of the prepared statements sent while `fn` runs (the per-request lookup is `svc_lookups`). */
async function preparedNames(fn: () => Promise<unknown>): Promise<string[]> {
  const names: string[] = [];
  await spyQueries((q) => {
    if (q.name) names.push(q.name);
  }, fn);
  return names;
}

describe('two instances: sends on a remembered session are confirmed by the send itself', () => {
  let server: TestServer;
  let state: StateReader;
  before(async () => {
    server = await startServer({}, {}, 'postgres-2');
    state = new StateReader(server, 'postgres');
  });
  after(() => server.close());

  /** A sender whose session instance 0 remembers (it answered a send), and a recipient. */
  async function remembered(devices = 1) {
    const a = await userWithDevices(instance(server, 0), devices);
    const b = await userWithDevices(instance(server, 0), 1);
    const first = await a.c.post('/api/messages', dmBody(b.c.nick), { device: a.devices[0]! });
    assert.equal(first.status, 202, first.text);
    return { a, b };
  }

  test('a remembered session sends without the per-request lookup; a session not yet checked looks up', async () => {
    const { a, b } = await remembered();
    const names = await preparedNames(async () => {
      const r = await a.c.post('/api/messages', dmBody(b.c.nick), { device: a.devices[0]! });
      assert.equal(r.status, 202, r.text);
    });
    assert.ok(!names.includes('svc_lookups'), `statements: ${names.join(', ')}`);
    // Instance 1 has never checked this session: its first send does the lookup.
    const other = await preparedNames(async () => {
      const r = await via(server, a.c, 1).post('/api/messages', dmBody(b.c.nick), { device: a.devices[0]! });
      assert.equal(r.status, 202, r.text);
    });
    assert.ok(other.includes('svc_lookups'), `statements: ${other.join(', ')}`);
  });

  test('after a logout on the other instance, the next send on this one is refused 401 and stores nothing', async () => {
    const { a, b } = await remembered();
    const out = await via(server, a.c, 1).post('/api/logout');
    assert.equal(out.status, 204, out.text);
    const before = await state.read();
    assertError(await a.c.post('/api/messages', dmBody(b.c.nick), { device: a.devices[0]! }), 401, 'unauthenticated');
    await state.assertUnchanged(before, 'a refused send of an ended session');
    // And again: the instance does not keep trusting what it remembered.
    assertError(await a.c.post('/api/messages', dmBody(b.c.nick), { device: a.devices[0]! }), 401, 'unauthenticated');
  });

  test('a remembered session that has ended gets 401 before bad_json, invalid, clock_skew and unknown_device', async () => {
    const { a, b } = await remembered();
    // While the session lives, those answers are what the remembered session gets.
    assertError(await a.c.post('/api/messages', 'not json', { device: a.devices[0]! }), 400, 'bad_json');
    assertError(await a.c.post('/api/messages', { ...dmBody(b.c.nick), iv: 'x' }, { device: a.devices[0]! }), 400, 'invalid', 'iv');
    assertError(await a.c.post('/api/messages', dmBody(b.c.nick, ulid(Date.now() - 3_600_000)), { device: a.devices[0]! }), 400, 'clock_skew');
    assertError(await a.c.post('/api/messages', dmBody(b.c.nick)), 403, 'unknown_device');
    assertError(await a.c.post('/api/messages', dmBody(b.c.nick), { device: 'no-such-device' }), 403, 'unknown_device');
    assert.equal((await via(server, a.c, 1).post('/api/logout')).status, 204);
    const before = await state.read();
    assertError(await a.c.post('/api/messages', 'not json', { device: a.devices[0]! }), 401, 'unauthenticated');
    assertError(await a.c.post('/api/messages', { ...dmBody(b.c.nick), iv: 'x' }, { device: a.devices[0]! }), 401, 'unauthenticated');
    assertError(await a.c.post('/api/messages', dmBody(b.c.nick, ulid(Date.now() - 3_600_000)), { device: a.devices[0]! }), 401, 'unauthenticated');
    assertError(await a.c.post('/api/messages', dmBody(b.c.nick)), 401, 'unauthenticated');
    await state.assertUnchanged(before, 'refused sends of an ended session');
  });

  test('a device deleted on the other instance is refused 403 unknown_device by the next send on this one, which stores nothing', async () => {
    const { a, b } = await remembered(2);
    const gone = await via(server, a.c, 1).del(`/api/devices/${a.devices[0]!}`, undefined, { device: a.devices[1]! });
    assert.ok(gone.status === 200 || gone.status === 204, gone.text);
    const before = await state.read();
    assertError(await a.c.post('/api/messages', dmBody(b.c.nick), { device: a.devices[0]! }), 403, 'unknown_device');
    await state.assertUnchanged(before, 'a send from a deleted device');
    // The session itself is fine: its other device sends.
    const r = await a.c.post('/api/messages', dmBody(b.c.nick), { device: a.devices[1]! });
    assert.equal(r.status, 202, r.text);
  });

  test("another account's device on a remembered session is refused 403 unknown_device", async () => {
    const { a, b } = await remembered();
    const c = await userWithDevices(instance(server, 0), 1);
    const before = await state.read();
    assertError(await a.c.post('/api/messages', dmBody(b.c.nick), { device: c.devices[0]! }), 403, 'unknown_device');
    await state.assertUnchanged(before, "a send from another account's device");
  });

  describe('attachment parts', () => {
    const part = (bytes = 100) => ({ data: Buffer.alloc(bytes, 7).toString('base64url') });

    /** An uploader whose session instance 0 remembers (it answered a part), and that upload's id. */
    async function rememberedUploader() {
      const { a } = await remembered();
      const id = id16();
      const first = await a.c.put(`/api/attachments/${id}/parts/0`, part());
      assert.equal(first.status, 204, first.text);
      return { a, id };
    }

    test('a part on a remembered session is written without the per-request lookup', async () => {
      const { a, id } = await rememberedUploader();
      const names = await preparedNames(async () => {
        const r = await a.c.put(`/api/attachments/${id}/parts/1`, part());
        assert.equal(r.status, 204, r.text);
      });
      assert.ok(!names.includes('svc_lookups'), `statements: ${names.join(', ')}`);
    });

    test('after a logout on the other instance, the next part on this one is refused 401 and stores nothing', async () => {
      const { a, id } = await rememberedUploader();
      assert.equal((await via(server, a.c, 1).post('/api/logout')).status, 204);
      const before = await state.read();
      assertError(await a.c.put(`/api/attachments/${id}/parts/1`, part()), 401, 'unauthenticated');
      assertError(await a.c.put(`/api/attachments/${id16()}/parts/0`, part()), 401, 'unauthenticated');
      await state.assertUnchanged(before, 'refused parts of an ended session');
    });

    test('a remembered session that has ended gets 401 before bad_json, invalid and file_too_large', async () => {
      const { a, id } = await rememberedUploader();
      assertError(await a.c.put(`/api/attachments/${id}/parts/1`, 'not json'), 400, 'bad_json');
      assertError(await a.c.put(`/api/attachments/${id}/parts/1`, { data: 'a+b/' }), 400, 'invalid', 'data');
      assertError(await a.c.put(`/api/attachments/${id}/parts/999999`, part()), 413, 'file_too_large');
      assert.equal((await via(server, a.c, 1).post('/api/logout')).status, 204);
      const before = await state.read();
      assertError(await a.c.put(`/api/attachments/${id}/parts/1`, 'not json'), 401, 'unauthenticated');
      assertError(await a.c.put(`/api/attachments/${id}/parts/1`, { data: 'a+b/' }), 401, 'unauthenticated');
      assertError(await a.c.put(`/api/attachments/${id}/parts/999999`, part()), 401, 'unauthenticated');
      await state.assertUnchanged(before, 'refused parts of an ended session');
    });
  });
});
