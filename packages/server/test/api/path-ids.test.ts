/**
 * Ids in the path that no room or device can have (docs/API.md formats) are answered like ids
 * of a room or device that does not exist (docs/API.md), on every store: the characters
 * PostgreSQL refuses in text (U+0000) and other odd ones must never reach the store and turn into a
 * 500.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { assertError, id16, startServer, userWithDevices, wk, type TestServer } from '@svc/testkit/harness';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

const ODD = ['a%00b', '%00', 'x%E2%80%AEy', 'a%0Ab', '%F0%9F%94%91'];
const pushBody = {
  subscription: {
    endpoint: 'https://push.example.org/x',
    keys: { p256dh: 'BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM', auth: 'tBHItJI5svbpez7KI4CCXg' },
  },
};

test('a room id that no room can have: leave and delete answer 204, members answers 403 not_owner', async () => {
  const { c, devices } = await userWithDevices(server, 1);
  for (const id of ODD) {
    assert.equal((await c.post(`/api/rooms/${id}/leave`, undefined, { device: devices[0]! })).status, 204, id);
    assert.equal((await c.del(`/api/rooms/${id}`)).status, 204, id);
    const r = await c.post(`/api/rooms/${id}/members`, { add: [], remove: [], keyId: id16(), keys: [wk(c.nick)] });
    assertError(r, 403, 'not_owner');
  }
});

test('a device id that no device can have answers 403 unknown_device on delete and on the push routes', async () => {
  const { c, devices } = await userWithDevices(server, 1);
  const own = devices[0]!;
  for (const id of ODD) {
    assertError(await c.del(`/api/devices/${id}`), 403, 'unknown_device');
    assertError(await c.put(`/api/devices/${id}/push`, pushBody, { device: own }), 403, 'unknown_device');
    assertError(await c.del(`/api/devices/${id}/push`, undefined, { device: own }), 403, 'unknown_device');
  }
  assert.equal((await c.get('/api/devices')).json.length, 1, 'nothing changed');
});
