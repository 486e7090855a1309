/**
 * The built service behind Debian's nginx with the site of deploy/nginx-svc.conf: the file
 * itself, only its ports, upstream and certificate paths swapped for the test's own (the test
 * certificate of scripts/test-ca.mjs, trusted through NODE_EXTRA_CA_CERTS as npm test sets it).
 * Shows that event streams arrive unbuffered, that the X-Real-IP nginx sets drives the per-IP
 * limits (a forged one from the client is overwritten), that the security headers survive, that
 * /metrics is not served there, and that plain HTTP redirects to HTTPS.
 *
 * nginx runs in the foreground (`daemon off`) with its pid file, logs and temp folders in a
 * temporary prefix, and is stopped by its PID. CI installs it when missing (.ci/run).
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Stream, assertError, dmBody, nick, registerBody, type ReqOptions, type Res, type TestServer } from '@svc/testkit/harness';
import { freePort } from '@svc/testkit/port';
import { startChildService, type ChildService } from '@svc/testkit/child';

const NGINX = '/usr/sbin/nginx';
const SITE = 'deploy/nginx-svc.conf';

/** Replaces `from` (which must occur exactly `times` times) in the site file. */
function swap(text: string, from: string | RegExp, to: string, times = 1): string {
  const re = typeof from === 'string' ? new RegExp(from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g') : new RegExp(from.source, 'gm');
  const n = [...text.matchAll(re)].length;
  assert.equal(n, times, `${SITE}: expected ${times} × ${String(from)}, found ${n}`);
  return text.replace(re, to);
}

/** deploy/nginx-svc.conf with the test's ports, upstream and certificate. */
export function renderSite(o: { https: number; http: number; upstream: number; cert: string; key: string }): string {
  let s = readFileSync(SITE, 'utf8');
  s = swap(s, 'server 127.0.0.1:8080;', `server 127.0.0.1:${o.upstream};`);
  s = swap(s, /^\s*listen \[::\]:\d+.*;\n/, '', 2); // loopback only in the test
  s = swap(s, 'listen 80;', `listen 127.0.0.1:${o.http};`);
  s = swap(s, 'listen 443 ssl http2;', `listen 127.0.0.1:${o.https} ssl http2;`);
  s = swap(s, '/etc/letsencrypt/live/chat.example.org/fullchain.pem', o.cert);
  s = swap(s, '/etc/letsencrypt/live/chat.example.org/privkey.pem', o.key);
  return s;
}

function mainConf(prefix: string, site: string): string {
  const p = (name: string) => join(prefix, name);
  for (const d of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(p(d));
  return `${process.getuid?.() === 0 ? 'user root;\n' : ''}daemon off;
worker_processes 1;
pid ${p('nginx.pid')};
error_log ${p('error.log')} warn;
events { worker_connections 256; }
http {
    access_log ${p('access.log')};
    client_body_temp_path ${p('client_body')};
    proxy_temp_path ${p('proxy')};
    fastcgi_temp_path ${p('fastcgi')};
    uwsgi_temp_path ${p('uwsgi')};
    scgi_temp_path ${p('scgi')};
    include ${site};
}
`;
}

/** A client that sends the HTTPS origin the service is configured with. */
class ProxiedClient extends Client {
  constructor(
    server: TestServer,
    private readonly origin: string,
  ) {
    super(server);
  }
  override req(method: string, path: string, o: ReqOptions = {}): Promise<Res> {
    return super.req(method, path, { ...o, headers: { origin: this.origin, ...(o.headers ?? {}) } });
  }
}

const SECURITY = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'cross-origin-opener-policy': 'same-origin',
  // Added by the site itself, on every HTTPS answer.
  'strict-transport-security': 'max-age=31536000',
};

function assertSecurityHeaders(r: { headers: Headers }, what: string): void {
  for (const [k, v] of Object.entries(SECURITY)) assert.equal(r.headers.get(k), v, `${what}: ${k}`);
}

describe('behind nginx with deploy/nginx-svc.conf', () => {
  let prefix: string;
  let service: ChildService;
  let nginx: ChildProcess;
  let nginxExit: Promise<unknown>;
  let origin: string;
  let viaProxy: TestServer;
  let direct: TestServer;
  let httpPort: number;

  before(async () => {
    // Not skipped when missing: CI installs it (.ci/run), and a silent skip would hide a broken proxy set-up.
    assert.ok(existsSync(NGINX), `${NGINX} missing: apt-get install nginx-light`);
    const tls = process.env.TEST_TLS_DIR;
    assert.ok(tls, 'TEST_TLS_DIR unset: run through `npm test -- ops/nginx`, which makes the test certificate');
    prefix = mkdtempSync(join(tmpdir(), 'svc-nginx-'));
    const httpsPort = await freePort();
    httpPort = await freePort();
    origin = `https://localhost:${httpsPort}`;
    service = await startChildService({
      env: { ORIGIN: origin, DATABASE_URL: `sqlite:${join(prefix, 'data', 'svc.db')}`, LIMIT_REGISTER_PER_HOUR: '2' },
      ready: 'listening',
    });
    const site = join(prefix, 'svc.conf');
    writeFileSync(
      site,
      renderSite({ https: httpsPort, http: httpPort, upstream: service.port, cert: join(tls, 'server.pem'), key: join(tls, 'server.key') }),
    );
    writeFileSync(join(prefix, 'nginx.conf'), mainConf(prefix, site));
    nginx = spawn(NGINX, ['-p', `${prefix}/`, '-c', join(prefix, 'nginx.conf'), '-e', join(prefix, 'error.log')], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    nginx.stderr!.on('data', (b: Buffer) => (err += b.toString()));
    nginxExit = new Promise((resolve) => nginx.once('exit', resolve));
    viaProxy = { url: origin } as TestServer;
    direct = { url: service.url } as TestServer;
    for (let i = 0; ; i++) {
      if (nginx.exitCode !== null) assert.fail(`nginx exited: ${err}${readLog(prefix)}`);
      const up = await fetch(`${origin}/healthz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (up) break;
      if (i > 100) assert.fail(`nginx did not come up: ${err}${readLog(prefix)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  after(async () => {
    if (nginx?.pid !== undefined && nginx.exitCode === null) {
      process.kill(nginx.pid, 'SIGTERM');
      await nginxExit;
    }
    await service?.stop();
    if (prefix) rmSync(prefix, { recursive: true, force: true });
  });

  test('the site serves the service over HTTPS with its security headers, and /metrics is not there', async () => {
    const health = await fetch(`${origin}/healthz`);
    assert.equal(await health.text(), 'ok');
    assertSecurityHeaders(health, '/healthz');
    const config = await fetch(`${origin}/api/config`);
    assert.equal(config.status, 200);
    assert.equal(config.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(config.headers.get('cache-control'), 'no-store');
    assertSecurityHeaders(config, '/api/config');
    const missing = await fetch(`${origin}/api/nope`);
    assert.equal(missing.status, 404);
    assertSecurityHeaders(missing, '/api/nope');
    const metrics = await fetch(`${origin}/metrics`);
    assert.ok(!(await metrics.text()).includes('# TYPE'));
    assertSecurityHeaders(metrics, '/metrics');
  });

  test('plain HTTP redirects to HTTPS', async () => {
    const r = await fetch(`http://127.0.0.1:${httpPort}/some/page`, { redirect: 'manual' });
    assert.equal(r.status, 301);
    assert.match(r.headers.get('location') ?? '', /^https:\/\/[^/]+\/some\/page$/);
  });

  test('HSTS: every HTTPS answer carries Strict-Transport-Security, errors and the app included; plain HTTP does not', async () => {
    const answers = await Promise.all(['/', '/some/page', '/healthz', '/api/config', '/api/me', '/api/nope'].map((p) => fetch(`${origin}${p}`)));
    answers.push(await fetch(`${origin}/api/login`, { method: 'POST', headers: { origin }, body: 'not json' }));
    for (const r of answers) assert.equal(r.headers.get('strict-transport-security'), 'max-age=31536000', `${r.url} (${r.status})`);
    assert.ok(answers.some((r) => r.status >= 400));
    const plain = await fetch(`http://127.0.0.1:${httpPort}/`, { redirect: 'manual' });
    assert.equal(plain.headers.get('strict-transport-security'), null, 'browsers ignore it over HTTP, and it is not sent there');
  });

  test('X-Real-IP is set by nginx: a forged one does not reset the per-IP registration limit', async () => {
    const register = (server: TestServer, forged: string) => {
      return new ProxiedClient(server, origin).post('/api/register', registerBody(nick('px')), { headers: { 'x-real-ip': forged } });
    };
    // LIMIT_REGISTER_PER_HOUR=2. Each client claims another address; nginx replaces the claim
    // with the connection's address (127.0.0.1), so the third is refused all the same.
    assert.equal((await register(viaProxy, '203.0.113.1')).status, 201);
    assert.equal((await register(viaProxy, '203.0.113.2')).status, 201);
    const third = await register(viaProxy, '203.0.113.3');
    assertError(third, 429, 'rate_limited');
    assertSecurityHeaders(third, '429');
    // The header is what the service counts by: straight from loopback, a new X-Real-IP is a new
    // budget, and the address nginx sent (127.0.0.1) is the one used up.
    assert.equal((await register(direct, '198.51.100.7')).status, 201);
    assertError(await register(direct, '127.0.0.1'), 429, 'rate_limited');
  });

  test('event streams pass unbuffered: a message reaches the stream through nginx at once', async () => {
    // Registration is used up above by 127.0.0.1; these accounts come "from" other addresses,
    // straight to the service, and then use the proxy for everything else.
    const signupDirect = async (ip: string) => {
      const n = nick('ev');
      const c = new ProxiedClient(direct, origin);
      const r = await c.post('/api/register', registerBody(n), { headers: { 'x-real-ip': ip } });
      assert.equal(r.status, 201, r.text);
      const p = new ProxiedClient(viaProxy, origin);
      p.cookie = c.cookie;
      p.nick = n;
      return p;
    };
    const a = await signupDirect('198.51.100.21');
    const b = await signupDirect('198.51.100.22');
    const da = `dev-nginx-a-${process.pid}`;
    const db = `dev-nginx-b-${process.pid}`;
    assert.equal((await a.post('/api/devices', { id: da })).status, 201);
    assert.equal((await b.post('/api/devices', { id: db })).status, 201);

    const stream = await Stream.open(b, db);
    assert.equal(stream.status, 200);
    assert.equal(stream.headers?.get('content-type'), 'text/event-stream; charset=utf-8');
    assertSecurityHeaders({ headers: stream.headers }, '/api/events');
    try {
      assert.ok(await stream.ready(2000), 'ready did not come through nginx');
      const body = dmBody(b.nick);
      const sent = await a.post('/api/messages', body, { device: da });
      assert.equal(sent.status, 202, sent.text);
      // A buffering proxy would hold this small frame back; it must arrive at once.
      assert.ok(
        await stream.until((ev) => ev.some((e) => e.event === 'msg' && e.id === body.id), 1000),
        'the message did not arrive through nginx within 1 s',
      );
    } finally {
      stream.close();
    }
  });
});

test('the nginx locations shown in docs/DEPLOY.md are those of deploy/nginx-svc.conf', () => {
  const doc = readFileSync('docs/DEPLOY.md', 'utf8');
  const site = readFileSync(SITE, 'utf8');
  const blocks = [...doc.matchAll(/```nginx\n([\s\S]*?)```/g)].flatMap((m) =>
    [...m[1]!.matchAll(/^ *location [^\n]*\{\n[\s\S]*?^ *\}\n/gm)].map((b) => b[0]),
  );
  assert.ok(blocks.length >= 2, 'no location blocks in docs/DEPLOY.md');
  for (const b of blocks) assert.ok(site.includes(b), `docs/DEPLOY.md shows a location that ${SITE} does not have:\n${b}`);
});

function readLog(prefix: string): string {
  try {
    return readFileSync(join(prefix, 'error.log'), 'utf8');
  } catch {
    return '';
  }
}
