/**
 * `PUSH_ALLOW_PRIVATE_TARGETS=1` lets pushes reach loopback, for tests, and nothing more: TLS
 * verification stays on (docs/PUSH.md). A push service on loopback whose certificate no trusted
 * authority signed (made here, self-signed, with openssl as scripts/test-ca.mjs makes the trusted
 * one) receives no request, and the failure is logged.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createECDH, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeB64url } from '@svc/protocol';
import { addDevice, dmBody, signup, startServer, type TestServer } from '@svc/testkit/harness';
import { listenOnLocalhost } from '@svc/testkit/push';

let server: TestServer;
let untrusted: Server;
let port = 0;
let requests = 0;
let dir = '';

before(async () => {
  server = await startServer({ PUSH_ALLOW_PRIVATE_TARGETS: '1' });
  dir = mkdtempSync(join(tmpdir(), 'svc-untrusted-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'k.pem', '-out', 'c.pem', '-days', '1'].concat(
      ['-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
    ),
    { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  untrusted = createServer({ key: readFileSync(join(dir, 'k.pem')), cert: readFileSync(join(dir, 'c.pem')) }, (_req, res) => {
    requests++;
    res.writeHead(201).end();
  });
  port = await listenOnLocalhost(untrusted);
});

after(async () => {
  await server.close();
  await new Promise<void>((r) => untrusted.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

test('with PUSH_ALLOW_PRIVATE_TARGETS=1, a push service whose certificate no trusted CA signed gets no request, and the failure is logged', async () => {
  const sender = await signup(server);
  const sDev = await addDevice(sender);
  const recipient = await signup(server);
  const rDev = await addDevice(recipient);
  // A browser-like subscription's keys; the endpoint is the untrusted service.
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  const keys = { p256dh: encodeB64url(ecdh.getPublicKey()), auth: encodeB64url(randomBytes(16)) };
  const endpoint = `https://localhost:${port}/untrusted`;
  const r = await recipient.put(`/api/devices/${rDev}/push`, { subscription: { endpoint, keys } }, { device: rDev });
  assert.equal(r.status, 204, r.text);

  assert.equal((await sender.post('/api/messages', dmBody(recipient.nick), { device: sDev })).status, 202);
  const failed = () => server.logs.filter((l) => l.msg === 'push failed');
  const deadline = Date.now() + 5_000;
  while (failed().length === 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 20));
  assert.equal(failed().length, 1, 'the failed push is logged');
  assert.match(String(failed()[0]!.reason), /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/, 'refused for its certificate');
  assert.equal(requests, 0, 'the untrusted service received no request');
});
