/**
 * What leaves the device (docs/CRYPTO.md): every request the SDK makes through a whole account's
 * life is recorded, method, URL, headers and body, and neither the password (old or new) nor any
 * message text appears in any of them, as text or in the encodings a client might use (base64,
 * base64url, hex of its UTF-8 bytes). The service sees the derived authKey, public keys and
 * ciphertexts only.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { KDF_MIN, type FetchLike } from '../src/index.js';
import { Inbox, client, nick, startServer, type TestServer } from './server.js';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

/** A recorder of every request's method, URL, headers and body, as the service would receive them. */
function recorder() {
  const seen: string[] = [];
  const wrap =
    (f: FetchLike): FetchLike =>
    async (url, init) => {
      const headers: string[] = [];
      new Headers(init?.headers).forEach((v, k) => headers.push(`${k}: ${v}`));
      const body = typeof init?.body === 'string' ? init.body : init?.body == null ? '' : JSON.stringify(init.body);
      seen.push([init?.method ?? 'GET', url, ...headers, body].join('\n'));
      return f(url, init);
    };
  return { seen, wrap };
}

/** A secret as it could leave: as text, and its UTF-8 bytes in base64, base64url and hex. */
function forms(secret: string): string[] {
  const b = Buffer.from(secret, 'utf8');
  return [secret, b.toString('base64').replace(/=+$/, ''), b.toString('base64url'), b.toString('hex')];
}

test('neither the password, old or new, nor any message text is in any request the SDK makes', async () => {
  const rec = recorder();
  const secret = (label: string) => `${label} ${randomBytes(9).toString('hex')} ✓`;
  const password = secret('password');
  const newPassword = secret('new password');
  const texts = [secret('a direct message'), secret('a room message'), secret('after the change')];

  const aliceNick = nick('leak');
  const alice = client(server, { wrap: rec.wrap });
  await alice.m.register({ nick: aliceNick, password, kdf: KDF_MIN });
  await alice.m.ensureDevice(`dev-${aliceNick}-1`);
  const bob = client(server);
  const bobNick = nick('leakb');
  await bob.m.register({ nick: bobNick, password: 'pw-' + bobNick, kdf: KDF_MIN });
  await bob.m.ensureDevice(`dev-${bobNick}-1`);
  const bobIn = new Inbox({ ...bob, deviceId: `dev-${bobNick}-1` }).start();
  try {
    await bobIn.ready();
    await alice.m.sendDm(bobNick, texts[0]!);
    const room = await alice.m.createRoom('garden', [bobNick]);
    await alice.m.sendRoom(room.id, texts[1]!);
    await alice.m.logout();
    const again = client(server, { wrap: rec.wrap });
    await again.m.login({ nick: aliceNick, password });
    await again.m.ensureDevice(`dev-${aliceNick}-1`);
    await again.m.changePassword(password, newPassword, { kdf: KDF_MIN });
    await again.m.sendDm(bobNick, texts[2]!);
    await bobIn.count(3);
  } finally {
    await bobIn.close();
  }

  assert.ok(rec.seen.length >= 8, `the requests were recorded (${rec.seen.length})`);
  assert.ok(
    rec.seen.some((r) => r.startsWith('POST') && r.includes('/api/password')),
    'the password change went through the recorder',
  );
  assert.ok(
    rec.seen.some((r) => r.includes('/api/messages') && r.includes('"ct":')),
    'bodies are recorded as sent: the messages are there as ciphertext',
  );
  assert.ok(
    rec.seen.some((r) => r.includes('/api/messages') && r.includes('x-device: dev-')),
    'headers are recorded as sent',
  );
  for (const s of [password, newPassword, ...texts]) {
    for (const form of forms(s)) {
      const hit = rec.seen.find((r) => r.includes(form));
      assert.equal(hit, undefined, `"${s}" left the device as ${form === s ? 'text' : form}`);
    }
  }
});
