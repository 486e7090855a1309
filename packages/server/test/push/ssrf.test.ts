/**
 * Push connections reach public addresses only (docs/PUSH.md, "Safety of the connection"). With the
 * test switch off, loopback, private, link-local, CGNAT, IPv6 local and IPv4-mapped forms are
 * refused without a connection, and so is a host name that resolves to loopback (resolver injected:
 * no traffic goes to any outside or private address).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { PushRefused, checkedAddress, sendPushRequest } from '../../src/push/connection.js';
import { isPublicAddress } from '../../src/push/address.js';
import { Client, addDevice, dmBody, signup, startServer } from '@svc/testkit/harness';
import { PushService } from '@svc/testkit/push';
import type { WebPusher } from '../../src/push/web-push.js';

const NON_PUBLIC = [
  '127.0.0.1',
  '10.0.0.1',
  '172.16.0.1',
  '192.168.1.1',
  '169.254.169.254',
  '100.64.0.1',
  '0.0.0.0',
  '0.1.2.3',
  '224.0.0.1',
  '255.255.255.255',
  '192.0.2.1',
  '198.51.100.1',
  '203.0.113.1',
  '198.18.0.1',
  '240.0.0.1',
  '::1',
  '::',
  'fc00::1',
  'fd12::1',
  'fe80::1',
  'ff02::1',
  '::ffff:127.0.0.1',
  '::ffff:10.0.0.1',
  '64:ff9b::7f00:1',
  '64:ff9b::a00:1',
  '2001:db8::1',
  '::127.0.0.1',
  '::a00:1',
  '2002:7f00:1::',
  '2002:a00:1::1',
];

describe('address classification', () => {
  test('every non-public range is refused', () => {
    for (const a of NON_PUBLIC) assert.equal(isPublicAddress(a), false, a);
  });
  test('public unicast passes, also as IPv4-mapped, NAT64 and 6to4 forms', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])
      assert.equal(isPublicAddress(a), true, a);
  });
});

describe('the push connection', () => {
  const opts = (resolve: (h: string) => Promise<{ address: string; family: number }[]> = async () => []) => ({
    resolve,
    allowPrivate: false,
    timeoutMs: 2000,
  });

  test('literal non-public endpoints are refused before any connection', async () => {
    // A listener that counts connections: none may arrive.
    let connections = 0;
    const probe = createServer(() => connections++);
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    for (const host of ['127.0.0.1', '10.0.0.1', '169.254.169.254', '100.64.0.1', '[::1]', '[fc00::1]', '[::ffff:127.0.0.1]']) {
      await assert.rejects(
        sendPushRequest({ endpoint: `https://${host}:${port}/x`, method: 'POST', headers: {}, body: null }, opts()),
        (e: unknown) => e instanceof PushRefused,
        host,
      );
    }
    probe.close();
    assert.equal(connections, 0);
  });

  test('a host name that resolves to loopback is refused without a connection', async () => {
    let asked = '';
    const resolve = async (h: string) => {
      asked = h;
      return [{ address: '127.0.0.1', family: 4 }];
    };
    await assert.rejects(checkedAddress('push.example.org', opts(resolve)), PushRefused);
    assert.equal(asked, 'push.example.org');
    const mixed = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.1.2.3', family: 4 },
    ];
    await assert.rejects(checkedAddress('push.example.org', opts(mixed)), PushRefused, 'one private address refuses the name');
  });

  test('the name is resolved once and the connection goes to the checked address with the name kept for TLS', async () => {
    const push = await PushService.start();
    try {
      let lookups = 0;
      const resolve = async () => {
        lookups++;
        return [{ address: '127.0.0.1', family: 4 }];
      };
      // push.test is on the test certificate; resolved by the injected resolver to loopback.
      const status = await sendPushRequest(
        { endpoint: `https://push.test:${push.port}/checked`, method: 'POST', headers: { ttl: 60 }, body: Buffer.from('x') },
        { resolve, allowPrivate: true, timeoutMs: 2000 },
      );
      assert.equal(status, 201);
      assert.equal(lookups, 1);
      assert.equal(push.forPath('/checked').length, 1);
    } finally {
      await push.close();
    }
  });

  test('an unresponsive push service is given up after the deadline', async () => {
    const silent = createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as { port: number }).port;
    const started = Date.now();
    await assert.rejects(
      sendPushRequest(
        { endpoint: `https://127.0.0.1:${port}/x`, method: 'POST', headers: {}, body: null },
        { ...opts(), allowPrivate: true, timeoutMs: 300 },
      ),
    );
    assert.ok(Date.now() - started < 2000);
    silent.close();
  });
});

describe('with the switch off, the service never pushes to a private target', () => {
  test('a subscription on a name resolving to loopback gets no connection, and the failure is logged', async () => {
    const push = await PushService.start();
    const server = await startServer({}, { pushResolver: async () => [{ address: '127.0.0.1', family: 4 }] });
    try {
      const a = await signup(server);
      const aDev = await addDevice(a);
      const b = await signup(server);
      const bDev = await addDevice(b);
      const sub = push.subscription('/private', 'push.test');
      const put = await b.put(`/api/devices/${bDev}/push`, { subscription: { endpoint: sub.endpoint, keys: sub.keys } }, { device: bDev });
      assert.equal(put.status, 204, 'a host name passes the shape check; it is checked when sending');
      const literal = await b.put(
        `/api/devices/${bDev}/push`,
        { subscription: { endpoint: `https://127.0.0.1:${push.port}/x`, keys: sub.keys } },
        { device: bDev },
      );
      assert.equal(literal.status, 400);
      assert.equal(literal.json.field, 'subscription');
      await a.post('/api/messages', dmBody(b.nick), { device: aDev });
      // The push is scheduled after the 202, once the store has claimed push-pending: wait for its outcome.
      assert.ok(
        await push.waitFor(() => server.logs.some((l) => l.msg === 'push failed' && l.reason === 'non-public address')),
        'the refusal is logged',
      );
      await (server.app.deps.pusher as WebPusher).drained();
      assert.equal(push.received.length, 0);
      assert.ok((await new Client(server).get('/healthz')).status === 200);
    } finally {
      await server.close();
      await push.close();
    }
  });
});
