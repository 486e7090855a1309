/** Configuration (README.md "Configuration"): defaults, overrides, and a clear refusal of bad values. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createECDH } from 'node:crypto';
import { encodeB64url } from '@svc/protocol';
import { ConfigError, parseConfig } from '../../src/config.js';
import { shortScalarPair } from '../push/short-vapid-key.js';

const defaults = { webRoot: '/tmp/web', build: { revision: 'dev', commitTime: null } };

/** A VAPID key pair as the environment gives it: b64url of the uncompressed public point and of the private scalar. */
function vapidPair(): { publicKey: string; privateKey: string } {
  const ecdh = createECDH('prime256v1');
  ecdh.generateKeys();
  return { publicKey: encodeB64url(ecdh.getPublicKey()), privateKey: encodeB64url(ecdh.getPrivateKey()) };
}
const VAPID = vapidPair();
const OTHER_VAPID = vapidPair();

test('defaults match the configuration table of the README', () => {
  const c = parseConfig({}, defaults);
  assert.equal(c.port, 8080);
  assert.equal(c.host, '127.0.0.1');
  assert.equal(c.origin, 'http://localhost:8080');
  assert.deepEqual(c.database, { kind: 'sqlite', path: './data/svc.db' });
  assert.equal(c.redisUrl, null);
  assert.equal(c.redisPrefix, 'svc:');
  assert.equal(c.registration, 'open');
  assert.equal(c.vapid.subject, 'mailto:admin@localhost');
  assert.deepEqual(c.rates, {
    messagesPerMin: 30,
    writesPerMin: 60,
    registerPerHour: 5,
    loginPer10Min: 10,
    loginPerIpPer10Min: 100,
    loginPerNickPer10Min: 50,
  });
  assert.equal(c.pushAllowPrivateTargets, false);
  assert.equal(c.logLevel, 'info');
  assert.equal(c.secureCookies, false);
});

test('ORIGIN follows PORT by default, and an https origin makes cookies Secure', () => {
  assert.equal(parseConfig({ PORT: '9000' }, defaults).origin, 'http://localhost:9000');
  const c = parseConfig({ ORIGIN: 'https://chat.example.org' }, defaults);
  assert.equal(c.origin, 'https://chat.example.org');
  assert.equal(c.secureCookies, true);
});

test('overrides are read for every variable', () => {
  const c = parseConfig(
    {
      PORT: '1234',
      HOST: '0.0.0.0',
      DATABASE_URL: 'sqlite:/var/lib/svc/x.db',
      REGISTRATION: 'invite',
      LIMIT_MESSAGES_PER_MIN: '1',
      LIMIT_WRITES_PER_MIN: '2',
      LIMIT_REGISTER_PER_HOUR: '3',
      LIMIT_LOGIN_PER_10MIN: '4',
      LIMIT_LOGIN_PER_IP_PER_10MIN: '5',
      LIMIT_LOGIN_PER_NICK_PER_10MIN: '6',
      PUSH_ALLOW_PRIVATE_TARGETS: '1',
      LOG_LEVEL: 'warn',
      VAPID_SUBJECT: 'https://example.org',
      VAPID_PUBLIC_KEY: VAPID.publicKey,
      VAPID_PRIVATE_KEY: VAPID.privateKey,
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_PREFIX: 'chat:',
    },
    defaults,
  );
  assert.equal(c.port, 1234);
  assert.equal(c.host, '0.0.0.0');
  assert.deepEqual(c.database, { kind: 'sqlite', path: '/var/lib/svc/x.db' });
  assert.equal(c.registration, 'invite');
  assert.deepEqual(c.rates, {
    messagesPerMin: 1,
    writesPerMin: 2,
    registerPerHour: 3,
    loginPer10Min: 4,
    loginPerIpPer10Min: 5,
    loginPerNickPer10Min: 6,
  });
  assert.equal(c.pushAllowPrivateTargets, true);
  assert.equal(c.logLevel, 'warn');
  assert.deepEqual(c.vapid, { subject: 'https://example.org', ...VAPID });
  assert.equal(c.redisUrl, 'redis://127.0.0.1:6379');
  assert.equal(c.redisPrefix, 'chat:');
});

test('DATABASE_URL postgres:// selects PostgreSQL and keeps the URL for the pool', () => {
  for (const url of ['postgres://u@db.example.org:5432/chat', 'postgresql://127.0.0.1/test']) {
    assert.deepEqual(parseConfig({ DATABASE_URL: url }, defaults).database, { kind: 'postgres', url });
  }
});

test('bad values are refused with a message naming the variable', () => {
  const cases: Record<string, string>[] = [
    { PORT: 'eighty' },
    { PORT: '70000' },
    { ORIGIN: 'localhost' },
    { ORIGIN: 'http://x.org/path' },
    { DATABASE_URL: 'mysql://x' },
    { REGISTRATION: 'closed' },
    { LIMIT_MESSAGES_PER_MIN: '0' },
    { LIMIT_WRITES_PER_MIN: '-1' },
    { LIMIT_REGISTER_PER_HOUR: '0' },
    { LIMIT_LOGIN_PER_10MIN: 'ten' },
    { LIMIT_LOGIN_PER_IP_PER_10MIN: '1.5' },
    { LIMIT_LOGIN_PER_NICK_PER_10MIN: '0' },
    { LIMIT_LOGIN_PER_NICK_PER_10MIN: 'fifty' },
    { DATABASE_URL: 'sqlite:' },
    { LOG_LEVEL: 'loud' },
    { PUSH_ALLOW_PRIVATE_TARGETS: 'yes' },
    { VAPID_PUBLIC_KEY: 'only-one' },
    { VAPID_PUBLIC_KEY: 'pub', VAPID_PRIVATE_KEY: 'priv' },
    { VAPID_PUBLIC_KEY: VAPID.publicKey, VAPID_PRIVATE_KEY: encodeB64url(new Uint8Array(33).fill(7)) },
    { VAPID_PUBLIC_KEY: VAPID.publicKey, VAPID_PRIVATE_KEY: encodeB64url(new Uint8Array(32)) },
    { VAPID_PUBLIC_KEY: VAPID.publicKey.slice(0, -2), VAPID_PRIVATE_KEY: VAPID.privateKey },
    { VAPID_PUBLIC_KEY: OTHER_VAPID.publicKey, VAPID_PRIVATE_KEY: VAPID.privateKey },
    { VAPID_SUBJECT: 'admin@example.org' },
    { REDIS_URL: 'localhost:6379' },
    { REDIS_PREFIX: 'has space' },
  ];
  for (const env of cases) {
    const name = Object.keys(env)[0]!;
    assert.throws(
      () => parseConfig(env, defaults),
      (e: unknown) => e instanceof ConfigError && e.message.includes(name.replace(/_(PUBLIC|PRIVATE)_KEY$/, '')),
      name,
    );
  }
});

test('a VAPID key pair from the environment is taken when it is one, a private key without its leading zero bytes included', () => {
  const c = parseConfig({ VAPID_PUBLIC_KEY: VAPID.publicKey, VAPID_PRIVATE_KEY: VAPID.privateKey }, defaults);
  assert.deepEqual(c.vapid, { subject: 'mailto:admin@localhost', ...VAPID });
  const short = shortScalarPair();
  const s = { publicKey: encodeB64url(short.publicKey), privateKey: encodeB64url(short.privateKey) };
  assert.deepEqual(parseConfig({ VAPID_PUBLIC_KEY: s.publicKey, VAPID_PRIVATE_KEY: s.privateKey }, defaults).vapid.privateKey, s.privateKey);
});

test('the service refuses to start on a bad value, with a clear message and a non-zero exit', () => {
  const r = spawnSync(process.execPath, ['packages/server/dist/src/main.js'], {
    env: { ...process.env, PORT: 'eighty' },
    encoding: 'utf8',
    timeout: 10_000,
  });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /PORT/);
});

test('PUSH_ALLOW_PRIVATE_TARGETS=1 makes the service log a warning at start', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-warn-'));
  const child = spawn(process.execPath, ['packages/server/dist/src/main.js'], {
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      DATABASE_URL: `sqlite:${join(dir, 'svc.db')}`,
      PUSH_ALLOW_PRIVATE_TARGETS: '1',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let out = '';
    const warned = await new Promise<Record<string, unknown> | null>((resolve) => {
      const timer = setTimeout(() => resolve(null), 15_000);
      child.stdout.on('data', (b: Buffer) => {
        out += b.toString('utf8');
        for (const line of out.split('\n')) {
          if (!line.includes('PUSH_ALLOW_PRIVATE_TARGETS')) continue;
          clearTimeout(timer);
          resolve(JSON.parse(line) as Record<string, unknown>);
        }
      });
      child.once('exit', () => resolve(null));
    });
    assert.ok(warned, `a warning naming the setting; the service wrote: ${out.slice(0, 500)}`);
    assert.equal(warned.level, 40, 'at warn level');
    assert.match(String(warned.msg), /for tests only/);
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

test('attachments: on by default with 25 MiB, 1 GiB, 200 MiB a minute, 30 days and 64 MiB kept in memory; each overridable; ATTACHMENTS=off turns them off', () => {
  assert.deepEqual(parseConfig({}, defaults).attachments, {
    maxBytes: 25 * 1024 * 1024,
    quotaBytes: 1024 ** 3,
    uploadBytesPerMin: 200 * 1024 * 1024,
    ttlDays: 30,
  });
  assert.equal(parseConfig({}, defaults).attachmentCacheBytes, 64 * 1024 * 1024);
  const env = {
    ATTACHMENT_MAX_BYTES: '1000',
    ATTACHMENT_QUOTA_BYTES: '5000',
    LIMIT_UPLOAD_BYTES_PER_MIN: '48000',
    ATTACHMENT_TTL_DAYS: '7',
    ATTACHMENT_CACHE_BYTES: '0',
  };
  assert.deepEqual(parseConfig(env, defaults).attachments, {
    maxBytes: 1000,
    quotaBytes: 5000,
    uploadBytesPerMin: 48000,
    ttlDays: 7,
  });
  assert.equal(parseConfig({ ATTACHMENT_CACHE_BYTES: '0' }, defaults).attachmentCacheBytes, 0);
  assert.equal(parseConfig({ ATTACHMENTS: 'off' }, defaults).attachments, null);
  assert.equal(parseConfig({ ATTACHMENTS: 'on' }, defaults).attachments?.ttlDays, 30);
});

test('bad attachment settings stop the start with a message naming the variable', () => {
  const bad: [Record<string, string>, RegExp][] = [
    [{ ATTACHMENTS: 'yes' }, /ATTACHMENTS must be one of on, off/],
    [{ ATTACHMENT_MAX_BYTES: '0' }, /ATTACHMENT_MAX_BYTES must be between/],
    [{ ATTACHMENT_MAX_BYTES: '2000', ATTACHMENT_QUOTA_BYTES: '1000' }, /ATTACHMENT_QUOTA_BYTES \(1000\) must be at least ATTACHMENT_MAX_BYTES/],
    [{ LIMIT_UPLOAD_BYTES_PER_MIN: '1000' }, /LIMIT_UPLOAD_BYTES_PER_MIN must be between 24000/],
    [{ ATTACHMENT_CACHE_BYTES: '2000000000000' }, /ATTACHMENT_CACHE_BYTES must be between 0/],
    [{ ATTACHMENT_TTL_DAYS: 'x' }, /ATTACHMENT_TTL_DAYS must be a whole number/],
  ];
  for (const [env, message] of bad)
    assert.throws(
      () => parseConfig(env, defaults),
      (e: unknown) => e instanceof ConfigError && message.test(e.message),
    );
});
