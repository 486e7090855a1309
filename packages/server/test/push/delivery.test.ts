/**
 * Web Push delivery against a real HTTPS push service on loopback (docs/API.md,
 * docs/PUSH.md). The service trusts the test CA through
 * NODE_EXTRA_CA_CERTS and runs with PUSH_ALLOW_PRIVATE_TARGETS=1.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeB64url } from '@svc/protocol';
import { Client, Stream, addDevice, dmBody, id16, iv, ct, signup, startServer, ulid, type TestServer } from '@svc/testkit/harness';
import { PushService, decryptPayload, verifyVapid, type Subscription } from '@svc/testkit/push';
import { NON_PUBLIC_LITERAL_HOSTS } from './non-public-hosts.js';
import type { WebPusher } from '../../src/push/web-push.js';
import { SqliteStore } from '../../src/store/sqlite/index.js';
import { shortScalarPair } from './short-vapid-key.js';
import { newVapidKeys } from '../../src/push/vapid-keys.js';

let server: TestServer;
let push: PushService;
let vapidKey: string;
let n = 0;

before(async () => {
  push = await PushService.start();
  server = await startServer({ PUSH_ALLOW_PRIVATE_TARGETS: '1' });
  vapidKey = (await new Client(server).get('/api/config')).json.vapidPublicKey;
});
after(async () => {
  await server.close();
  await push.close();
});

/**
 * Waits for the push service to have received `n` pushes for `path`; when they do not come, the
 * failure shows what the service logged about pushes, so a run that fails says why.
 */
async function arrived(path: string, n: number, what = `${n} push(es) for the path`, on = server): Promise<void> {
  if (await push.waitFor(() => push.forPath(path).length === n, 5_000)) return;
  const pushLog = on.logs.filter((l) => /push/i.test(String(l.msg)));
  assert.fail(`${what}: got ${push.forPath(path).length}; push log: ${JSON.stringify(pushLog.slice(-5))}`);
}

/** Every instance's pusher drained (in the two-instance mode a push goes out from either one). */
const drained = () => Promise.all(server.apps.map((a) => (a.deps.pusher as WebPusher).drained()));

async function subscribe(c: Client, device: string, sub: Subscription): Promise<void> {
  const r = await c.put(
    `/api/devices/${device}/push`,
    { subscription: { endpoint: sub.endpoint, keys: sub.keys, expirationTime: null } },
    { device },
  );
  assert.equal(r.status, 204, r.text);
}

/** A recipient with one subscribed offline device, and a sender with a device, on `on`. */
async function pair(on = server) {
  const path = `/sub/${++n}`;
  const sender = await signup(on);
  const sDev = await addDevice(sender);
  const recipient = await signup(on);
  const rDev = await addDevice(recipient);
  const sub = push.subscription(path);
  await subscribe(recipient, rDev, sub);
  return { path, sender, sDev, recipient, rDev, sub };
}

describe('push delivery', () => {
  test('PUT push rule 2 holds with PUSH_ALLOW_PRIVATE_TARGETS=1: a literal non-public host is invalid, a loopback name is accepted', async () => {
    const c = await signup(server);
    const d = await addDevice(c);
    const keys = push.subscription('/literal').keys;
    for (const h of NON_PUBLIC_LITERAL_HOSTS) {
      for (const endpoint of [`https://${h}/`, `https://${h}:${push.port}/literal`]) {
        const r = await c.put(`/api/devices/${d}/push`, { subscription: { endpoint, keys } }, { device: d });
        assert.equal(r.status, 400, endpoint);
        assert.deepEqual([r.json.error, r.json.field], ['invalid', 'subscription'], endpoint);
      }
    }
    assert.equal((await c.get('/api/devices')).json[0].push, false, 'no refused endpoint was stored');
    assert.equal(
      (await c.put(`/api/devices/${d}/push`, { subscription: { endpoint: `https://localhost:${push.port}/literal`, keys } }, { device: d })).status,
      204,
    );
  });

  test('a DM to an offline subscribed device sends one encrypted push titled @sender with chat dm:sender', async () => {
    const p = await pair();
    const r = await p.sender.post('/api/messages', dmBody(p.recipient.nick), { device: p.sDev });
    assert.equal(r.status, 202);
    await arrived(p.path, 1);
    const rec = push.forPath(p.path)[0]!;
    assert.deepEqual(decryptPayload(rec, p.sub), { title: `@${p.sender.nick}`, body: 'New message', chat: `dm:${p.sender.nick}` });
    assert.equal(rec.headers['content-encoding'], 'aes128gcm');
    assert.equal(rec.headers.ttl, '86400');
  });

  test('the VAPID JWT is signed with the key of /api/config, for the push service origin, expiring within a day', async () => {
    const p = await pair();
    await p.sender.post('/api/messages', dmBody(p.recipient.nick), { device: p.sDev });
    await arrived(p.path, 1);
    const claims = verifyVapid(push.forPath(p.path)[0]!, vapidKey);
    assert.equal(claims.aud, `https://localhost:${push.port}`);
    assert.ok(claims.exp > Date.now() / 1000 && claims.exp <= Date.now() / 1000 + 86_400 + 60);
    assert.equal(claims.sub, 'mailto:admin@localhost');
  });

  test('a room message pushes with title #room name and chat room:id, and the body never holds message text', async () => {
    const p = await pair();
    const roomId = id16();
    await p.sender.post('/api/rooms', { id: roomId, name: 'Garden club', keyId: id16(), keys: [{ to: p.sender.nick, iv: iv(), ct: ct() }] });
    const keyId = id16();
    const m = await p.sender.post(`/api/rooms/${roomId}/members`, {
      add: [p.recipient.nick],
      remove: [],
      keyId,
      keys: [p.sender.nick, p.recipient.nick].map((to) => ({ to, iv: iv(), ct: ct() })),
    });
    assert.equal(m.status, 200, m.text);
    const secret = ct(64);
    await p.sender.post('/api/messages', { id: ulid(), to: { room: roomId }, keyId, iv: iv(), ct: secret }, { device: p.sDev });
    await arrived(p.path, 1);
    const rec = push.forPath(p.path)[0]!;
    assert.deepEqual(decryptPayload(rec, p.sub), { title: '#Garden club', body: 'New message', chat: `room:${roomId}` });
    assert.ok(!rec.body.includes(Buffer.from(secret)), 'ciphertext of the message is not carried');
  });

  test('a VAPID private key kept without its leading zero byte (as older builds stored about one key in 200) still signs every push', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-vapid-'));
    const store = SqliteStore.open(join(dir, 'svc.db'));
    const short = shortScalarPair();
    const kept = { publicKey: encodeB64url(short.publicKey), privateKey: encodeB64url(short.privateKey) };
    await store.getOrCreateMeta('vapid_keys', () => JSON.stringify(kept));
    const other = await startServer({ PUSH_ALLOW_PRIVATE_TARGETS: '1' }, { store });
    try {
      assert.equal((await new Client(other).get('/api/config')).json.vapidPublicKey, kept.publicKey, 'the kept public key is served');
      const p = await pair(other);
      assert.equal((await p.sender.post('/api/messages', dmBody(p.recipient.nick), { device: p.sDev })).status, 202);
      await arrived(p.path, 1, 'a push signed with the kept key', other);
      assert.equal(verifyVapid(push.forPath(p.path)[0]!, kept.publicKey).sub, 'mailto:admin@localhost');
    } finally {
      await other.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a push whose request cannot be built (a kept VAPID private key of 33 bytes) is logged as such, naming no endpoint, nick or room', async () => {
    // The environment's keys are checked at start (unit/config.test.ts); a pair kept in a damaged
    // database is not, and its first push is where it fails.
    const dir = mkdtempSync(join(tmpdir(), 'svc-vapid-bad-'));
    const store = SqliteStore.open(join(dir, 'svc.db'));
    const keys = newVapidKeys();
    await store.getOrCreateMeta('vapid_keys', () =>
      JSON.stringify({ publicKey: keys.publicKey, privateKey: encodeB64url(new Uint8Array(33).fill(7)) }),
    );
    const other = await startServer({ PUSH_ALLOW_PRIVATE_TARGETS: '1' }, { store });
    try {
      const { path, sender, sDev, recipient } = await pair(other);
      assert.equal((await sender.post('/api/messages', dmBody(recipient.nick), { device: sDev })).status, 202);
      assert.ok(await push.waitFor(() => other.logs.some((l) => l.msg === 'push failed'), 5_000), 'the failure is logged');
      const failed = other.logs.filter((l) => l.msg === 'push failed');
      assert.deepEqual(
        failed.map((l) => l.reason),
        ['request not built (VAPID or subscription keys)'],
      );
      const line = JSON.stringify(failed[0]);
      for (const secret of [path, `${push.port}`, sender.nick, recipient.nick]) assert.ok(!line.includes(secret), `${secret} in ${line}`);
      assert.equal(push.forPath(path).length, 0);
    } finally {
      await other.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('exactly one push until reset: a second message sends none, PUT …/push resets, opening the stream resets', async () => {
    const p = await pair();
    await p.sender.post('/api/messages', dmBody(p.recipient.nick), { device: p.sDev });
    await p.sender.post('/api/messages', dmBody(p.recipient.nick), { device: p.sDev });
    await arrived(p.path, 1);
    await drained();
    await Stream.settle(100);
    assert.equal(push.forPath(p.path).length, 1, 'the second message sent no push');

    await subscribe(p.recipient, p.rDev, p.sub);
    await p.sender.post('/api/messages', dmBody(p.recipient.nick), { device: p.sDev });
    await arrived(p.path, 2, 'PUT …/push reset the flag');

    const s = await Stream.open(p.recipient, p.rDev);
    assert.ok(await s.ready());
    s.close();
    await Stream.settle(100);
    await p.sender.post('/api/messages', dmBody(p.recipient.nick), { device: p.sDev });
    await arrived(p.path, 3, 'opening the stream reset the flag');
  });

  test("no push to a device with an open stream, nor to the sender's own other devices", async () => {
    const p = await pair();
    const s = await Stream.open(p.recipient, p.rDev);
    assert.ok(await s.ready());
    const own = await addDevice(p.sender);
    const ownSub = push.subscription(`/own/${n}`);
    await subscribe(p.sender, own, ownSub);
    await p.sender.post('/api/messages', dmBody(p.recipient.nick), { device: p.sDev });
    assert.ok(await s.until((ev) => ev.some((e) => e.event === 'msg')));
    await drained();
    await Stream.settle(100);
    assert.equal(push.forPath(p.path).length, 0);
    assert.equal(push.forPath(`/own/${n}`).length, 0);
    s.close();
  });

  for (const status of [404, 410]) {
    test(`a ${status} from the push service deletes the subscription`, async () => {
      const p = await pair();
      push.statusFor.set(p.path, status);
      await p.sender.post('/api/messages', dmBody(p.recipient.nick), { device: p.sDev });
      await arrived(p.path, 1);
      await drained();
      const devices = await p.recipient.get('/api/devices');
      assert.equal(devices.json[0].push, false);
    });
  }

  test('a 3xx is not followed, and the subscription stays', async () => {
    const p = await pair();
    push.statusFor.set(p.path, 302);
    await p.sender.post('/api/messages', dmBody(p.recipient.nick), { device: p.sDev });
    await arrived(p.path, 1);
    await drained();
    await Stream.settle(100);
    assert.equal(push.forPath('/redirected').length, 0);
    assert.equal((await p.recipient.get('/api/devices')).json[0].push, true);
  });

  test('the 202 does not wait for the push service', async () => {
    const p = await pair();
    push.hang.add(p.path);
    // The push service holds this request unanswered: the send still returns while it is pending.
    const r = await p.sender.post('/api/messages', dmBody(p.recipient.nick, ulid()), { device: p.sDev });
    assert.equal(r.status, 202);
    await arrived(p.path, 1);
    assert.equal(push.forPath(p.path).length, 1);
  });

  test('push failures are logged without endpoint, nick or room', async () => {
    const p = await pair();
    push.statusFor.set(p.path, 500);
    await p.sender.post('/api/messages', dmBody(p.recipient.nick), { device: p.sDev });
    await arrived(p.path, 1);
    assert.ok(await push.waitFor(() => server.logs.some((l) => l.msg === 'push refused by the push service')), 'the failure is logged');
    await drained();
    const text = JSON.stringify(server.logs);
    assert.ok(server.logs.some((l) => l.msg === 'push refused by the push service' && l.status === 500));
    for (const secret of [p.path, p.sender.nick, p.recipient.nick, String(push.port)]) assert.ok(!text.includes(secret), `log holds ${secret}`);
  });
});
