/** The client address for rate limits (docs/API.md): X-Real-IP only from a loopback peer. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { clientIp, limitAddress } from '../../src/http/client-ip.js';

test('X-Real-IP names the client when the connection comes from a loopback address (a local reverse proxy)', () => {
  for (const peer of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) {
    assert.equal(clientIp(peer, '203.0.113.7'), '203.0.113.7', peer);
    assert.equal(clientIp(peer, ' 2001:db8::7 '), '2001:db8::7', peer);
  }
});

test("from any other peer X-Real-IP is ignored and the connection's own address is used", () => {
  for (const peer of ['10.0.0.5', '192.168.1.2', '203.0.113.9', '::ffff:10.0.0.1', '2001:db8::1', 'fe80::1']) {
    assert.equal(clientIp(peer, '127.0.0.1'), peer, peer);
    assert.equal(clientIp(peer, '198.51.100.1'), peer, peer);
  }
});

test('a loopback peer without a usable X-Real-IP (absent, empty, repeated) is itself the client', () => {
  assert.equal(clientIp('127.0.0.1', undefined), '127.0.0.1');
  assert.equal(clientIp('127.0.0.1', '  '), '127.0.0.1');
  assert.equal(clientIp('::1', ['198.51.100.1', '198.51.100.2']), '::1');
  assert.equal(clientIp(undefined, '198.51.100.1'), 'unknown');
  assert.equal(clientIp('not an address', '198.51.100.1'), 'not an address');
});

test('limits count an IPv6 client by its /64, in any spelling, and an IPv4-mapped address as IPv4', () => {
  const slash64 = '2001:db8:1:2::/64';
  for (const a of ['2001:db8:1:2::5', '2001:0db8:0001:0002:0000:0000:0000:0005', '2001:DB8:1:2:FFFF:FFFF:FFFF:FFFF', '2001:db8:1:2:0:0:0:0'])
    assert.equal(limitAddress(a), slash64, a);
  assert.notEqual(limitAddress('2001:db8:1:3::5'), slash64);
  for (const a of ['203.0.113.7', '::ffff:203.0.113.7', '::ffff:cb00:7107', '0:0:0:0:0:ffff:203.0.113.7'])
    assert.equal(limitAddress(a), '203.0.113.7', a);
  assert.equal(limitAddress('fe80::1%eth0'), 'fe80:0:0:0::/64');
  assert.equal(limitAddress('unknown'), 'unknown', 'no address: its own key');
});
