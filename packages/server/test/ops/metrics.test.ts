/**
 * Prometheus metrics: off unless METRICS_PORT is set, then served on 127.0.0.1 only and never
 * under the public origin; requests by route template and status, latency, open streams,
 * queued envelopes, pushes, rate-limit refusals and (with Redis) bus lag; no label carries a
 * nick, device id, room id or concrete path. Each app instance has its own registry.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { metricsUrl } from '../../src/ops/metrics.js';
import { ConfigError, parseConfig } from '../../src/config.js';
import { Stream, addDevice, b64, dmBody, id16, nick, signup, startServer, userWithDevices, wk } from '@svc/testkit/harness';

async function scrape(url: string): Promise<string> {
  const r = await fetch(url);
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return r.text();
}

/** The value of one sample, e.g. sample(text, 'svc_http_requests_total', { route: '/api/me', status: '200' }). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const got = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(m[3]);
  }
  return undefined;
}

test('METRICS_PORT: unset or empty is off, a port number is on, anything else stops the start', () => {
  const defaults = { webRoot: '/nonexistent', build: { revision: 'dev', commitTime: null } };
  assert.equal(parseConfig({}, defaults).metricsPort, null);
  assert.equal(parseConfig({ METRICS_PORT: '' }, defaults).metricsPort, null);
  assert.equal(parseConfig({ METRICS_PORT: '9464' }, defaults).metricsPort, 9464);
  for (const bad of ['x', '-1', '65536', '9464 ']) assert.throws(() => parseConfig({ METRICS_PORT: bad }, defaults), ConfigError, bad);
});

test('without METRICS_PORT there is no metrics listener, and /metrics on the main port is like any other path', async () => {
  const server = await startServer();
  try {
    assert.equal(metricsUrl(server.app.fastify), null);
    const r = await fetch(`${server.url}/metrics`);
    const body = await r.text();
    // The web client's index.html (200, HTML) or 404: never the Prometheus text.
    assert.ok(r.status === 404 || (r.status === 200 && /text\/html/.test(r.headers.get('content-type') ?? '')), `${r.status}`);
    assert.ok(!body.includes('svc_http_requests_total') && !body.includes('# TYPE'));
  } finally {
    await server.close();
  }
});

test('metrics count requests by route template, stream, queue and refusals, and no label names a nick or id', async () => {
  const server = await startServer({ METRICS_PORT: '0', LIMIT_WRITES_PER_MIN: '3' });
  try {
    const url = metricsUrl(server.app.fastify);
    assert.ok(url);
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);

    // /metrics on the public port is still not the metrics.
    const pub = await fetch(`${server.url}/metrics`);
    assert.ok(!(await pub.text()).includes('# TYPE'));

    const a = await userWithDevices(server, 1, nick('metra'));
    const b = await userWithDevices(server, 1, nick('metrb'));
    const roomId = id16();
    assert.equal((await a.c.post('/api/rooms', { id: roomId, name: 'metrics room', keyId: id16(), keys: [wk(a.c.nick)] })).status, 201);
    const stream = await Stream.open(b.c, b.devices[0]!);
    assert.ok(await stream.ready());
    assert.equal((await a.c.post('/api/messages', dmBody(b.c.nick), { device: a.devices[0] })).status, 202);
    assert.equal((await a.c.get(`/api/users/${b.c.nick}`)).status, 200);
    // a used two writes (device, room); the third passes and the fourth is refused.
    await a.c.post('/api/contacts', { nick: b.c.nick });
    assert.equal((await a.c.post('/api/contacts', { nick: b.c.nick })).status, 429);
    // an offline device of b, so one envelope stays queued
    await addDevice(b.c);
    assert.equal((await a.c.post('/api/messages', dmBody(b.c.nick), { device: a.devices[0] })).status, 202);
    // Two attachment parts: 30 and 12 bytes.
    const attachmentId = id16();
    assert.equal((await a.c.put(`/api/attachments/${attachmentId}/parts/0`, { data: b64(30) })).status, 204);
    assert.equal((await b.c.put(`/api/attachments/${id16()}/parts/0`, { data: b64(12) })).status, 204);

    const text = await scrape(url);
    assert.equal(sample(text, 'svc_http_requests_total', { method: 'POST', route: '/api/register', status: '201' }), 2);
    assert.equal(sample(text, 'svc_http_requests_total', { method: 'POST', route: '/api/messages', status: '202' }), 2);
    assert.equal(sample(text, 'svc_http_requests_total', { method: 'GET', route: '/api/users/:nick', status: '200' }), 1);
    assert.equal(sample(text, 'svc_http_requests_total', { method: 'GET', route: 'unmatched', status: pub.status === 404 ? '404' : '200' }), 1);
    assert.equal(sample(text, 'svc_rate_limited_total', { route: '/api/contacts' }), 1);
    assert.ok((sample(text, 'svc_http_request_duration_seconds_count', { method: 'POST', route: '/api/messages' }) ?? 0) >= 2);
    assert.equal(sample(text, 'svc_event_streams_open'), 1);
    // Entries stay queued until acked, streamed or not: the first message once, the second for both of b's devices.
    assert.equal(sample(text, 'svc_queued_envelopes'), 3);
    assert.equal(sample(text, 'svc_accounts'), 2);
    assert.equal(sample(text, 'svc_rooms'), 1);
    assert.equal(sample(text, 'svc_attachments'), 2);
    assert.equal(sample(text, 'svc_attachment_bytes'), 42);
    assert.equal(sample(text, 'svc_attachment_uploaded_bytes_total'), 42);
    assert.equal(sample(text, 'svc_store_up'), 1);
    assert.equal(sample(text, 'svc_push_notifications_total', { result: 'sent' }), 0);
    assert.ok(sample(text, 'svc_process_cpu_user_seconds_total') !== undefined);

    for (const secret of [a.c.nick, b.c.nick, ...a.devices, ...b.devices, roomId, attachmentId, '127.0.0.1', 'metrics room']) {
      assert.ok(!text.includes(secret), `the metrics contain ${secret}`);
    }
    // Every route label is a template or `unmatched`, never a concrete path.
    for (const m of text.matchAll(/route="([^"]*)"/g)) assert.match(m[1]!, /^(unmatched|\/[a-z/:*]*)$/, m[1]);

    // Only /metrics is served there.
    assert.equal((await fetch(url.replace('/metrics', '/'))).status, 404);
    stream.close();
  } finally {
    await server.close();
  }
  // The listener closed with the app.
  await assert.rejects(fetch(metricsUrl(server.app.fastify)!));
});

test('two instances in one process keep their own registries; with Redis the bus lag is measured', async () => {
  const server = await startServer({ METRICS_PORT: '0' }, {}, 'postgres-2');
  try {
    const [u0, u1] = server.apps.map((a) => metricsUrl(a.fastify)!);
    assert.notEqual(u0, u1);
    // Talk to each instance directly: the sender on instance 0, the reader's stream on instance 1.
    const s0 = { ...server, url: server.urls[0]! };
    const s1 = { ...server, url: server.urls[1]! };
    const a = await signup(s0, nick('laga'));
    const da = await addDevice(a);
    const b = await signup(s1, nick('lagb'));
    const db = await addDevice(b);
    const stream = await Stream.open(b, db);
    assert.ok(await stream.ready());
    assert.equal((await a.post('/api/messages', dmBody(b.nick), { device: da })).status, 202);
    assert.ok(await stream.until((ev) => ev.some((e) => e.event === 'msg')));

    const [t0, t1] = [await scrape(u0!), await scrape(u1!)];
    assert.equal(sample(t0, 'svc_http_requests_total', { method: 'POST', route: '/api/messages', status: '202' }), 1);
    assert.equal(sample(t1, 'svc_http_requests_total', { method: 'POST', route: '/api/messages', status: '202' }), undefined);
    assert.equal(sample(t1, 'svc_event_streams_open'), 1);
    assert.equal(sample(t0, 'svc_event_streams_open'), 0);
    // The delivery published by instance 0 arrived at instance 1 through Redis.
    assert.ok((sample(t1, 'svc_bus_lag_seconds_count') ?? 0) >= 1, 'no bus lag observed');
    stream.close();
  } finally {
    await server.close();
  }
});
