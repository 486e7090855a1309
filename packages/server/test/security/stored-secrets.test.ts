/**
 * What a thief of the database gets (docs/SECURITY.md): after registration, logins, a password
 * change, messages and a push subscription, no table holds an authKey or a session token in any
 * encoding, only their SHA-256; envelopes are the ciphertext as sent. On SQLite and PostgreSQL.
 * (test/api/accounts-session.test.ts checks the session rows themselves.)
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { decodeB64url } from '@svc/protocol';
import { Client, b64, ct, iv, kdf, nick, publicKey, signup, startServer, userWithDevices, dmBody } from '@svc/testkit/harness';
import { StateReader } from '../reliability/snapshot.js';

/** Every way a 32-byte secret could show up in a dump: b64url, base64, hex (either case). */
function encodings(b64url: string): string[] {
  const bytes = Buffer.from(decodeB64url(b64url)!);
  return [b64url, bytes.toString('base64'), bytes.toString('hex'), bytes.toString('hex').toUpperCase()];
}

for (const mode of ['sqlite', 'postgres'] as const) {
  describe(`stored secrets (${mode})`, () => {
    test('no authKey and no session token is stored in any encoding, only their SHA-256', async () => {
      const server = await startServer({}, {}, mode);
      try {
        const {
          c: alice,
          devices: [aDev],
        } = await userWithDevices(server, 1);
        const { c: bob } = await userWithDevices(server, 1);
        const tokens: string[] = [alice.cookie!.split('=')[1]!, bob.cookie!.split('=')[1]!];
        const keys: string[] = [alice.authKey, bob.authKey];
        // A second session and a password change: old and new keys, every token.
        const again = new Client(server);
        assert.equal((await again.post('/api/login', { nick: alice.nick, authKey: alice.authKey })).status, 200);
        tokens.push(again.cookie!.split('=')[1]!);
        const newKey = b64(32);
        assert.equal(
          (await alice.post('/api/password', { authKey: alice.authKey, newAuthKey: newKey, kdf: kdf(), encryptedKey: { iv: iv(), ct: ct(48) } }))
            .status,
          204,
        );
        keys.push(newKey);
        const carol = await signup(server, nick('sec'));
        tokens.push(carol.cookie!.split('=')[1]!);
        keys.push(carol.authKey);
        const msg = dmBody(bob.nick);
        assert.equal((await alice.post('/api/messages', msg, { device: aDev })).status, 202);
        const sub = { subscription: { endpoint: 'https://push.example.com/x', keys: { p256dh: publicKey(), auth: b64(16) } } };
        assert.equal((await alice.put(`/api/devices/${aDev}/push`, sub, { device: aDev })).status, 204);

        const dump = await new StateReader(server, mode).read();
        for (const k of keys) {
          for (const e of encodings(k)) assert.ok(!dump.includes(e), 'an authKey is stored');
        }
        for (const t of tokens) for (const e of encodings(t)) assert.ok(!dump.includes(e), 'a session token is stored');
        // The sessions still open (the password change ended alice's second one) are kept by the SHA-256 of their token.
        for (const t of [tokens[0]!, tokens[1]!, tokens[3]!])
          assert.ok(dump.includes(createHash('sha256').update(t).digest('hex')), 'a session is kept by its SHA-256');
        // The current authKey is kept as its SHA-256 (a digest of the 32 bytes).
        const digest = createHash('sha256').update(decodeB64url(newKey)!).digest();
        assert.ok(
          dump.includes(digest.toString('hex')) || dump.includes(digest.toString('base64')) || dump.includes(`\\\\x${digest.toString('hex')}`),
          'the authKey digest is stored',
        );
        assert.ok(dump.includes(msg.ct), 'an envelope is stored as the ciphertext sent');
      } finally {
        await server.close();
      }
    });
  });
}
