/**
 * What an attacker learns from the login and KDF endpoints (docs/API.md): the authKey check
 * is a constant-time comparison of equal-length digests; an unknown nick and a wrong key answer
 * the same, in body and (within noise) in time; KDF decoys for nicks without an account look
 * like real answers and are stable across calls and restarts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { KDF_DEFAULTS, decodeB64url } from '@svc/protocol';
import { createApp } from '../../src/app.js';
import { parseConfig } from '../../src/config.js';
import { authKeyHash, sameHash } from '../../src/crypto.js';
import { Client, b64, nick, registerBody, signup, startServer, type TestServer } from '@svc/testkit/harness';

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

describe('the authKey comparison', () => {
  test('sameHash: true only for equal digests; a length mismatch is false, never a throw', () => {
    const a = authKeyHash(b64(32));
    assert.equal(sameHash(a, Uint8Array.from(a)), true);
    const b = Uint8Array.from(a);
    b[31] = b[31]! ^ 1;
    assert.equal(sameHash(a, b), false);
    b[31] = b[31] ^ 1;
    b[0] = b[0]! ^ 0x80;
    assert.equal(sameHash(a, b), false);
    assert.equal(sameHash(a, a.subarray(0, 16)), false);
    assert.equal(sameHash(new Uint8Array(0), a), false);
  });

  test('both sides are SHA-256 digests of equal length, compared with crypto.timingSafeEqual', () => {
    for (let i = 0; i < 20; i++) assert.equal(authKeyHash(b64(32)).length, 32);
    const src = sameHash.toString();
    assert.match(src, /timingSafeEqual\(/, 'sameHash compares with timingSafeEqual');
    assert.doesNotMatch(src, /===|\.equals\(|Buffer\.compare|\bfor\b/, 'no early-exit comparison');
    // The login, password change and account deletion paths all go through verify(): the stored
    // hash, or a 32-byte dummy for an unknown nick, against SHA-256 of the given key.
    const domain = readFileSync(fileURLToPath(new URL('../../src/domain/accounts.js', import.meta.url)), 'utf8');
    assert.match(domain, /sameHash\(authKeyHash\(authKey\), account\?\.authKeyHash \?\? DUMMY_HASH\)/);
    assert.match(domain, /DUMMY_HASH = new Uint8Array\(32\)/);
    assert.doesNotMatch(domain, /authKeyHash\s*===|\.equals\(/);
  });

  test('timing: a digest differing in its first byte, its last byte or not at all takes the same time to compare', () => {
    const a = Buffer.from(authKeyHash(b64(32)));
    const kinds = { equal: Buffer.from(a), first: Buffer.from(a), last: Buffer.from(a) };
    kinds.first[0] = kinds.first[0]! ^ 0xff;
    kinds.last[31] = kinds.last[31]! ^ 0xff;
    const samples: Record<string, number[]> = { equal: [], first: [], last: [] };
    const BATCH = 2000;
    for (let round = 0; round < 151; round++) {
      // Interleaved, in a rotating order, so drift and warm-up hit every kind alike.
      const order = (['equal', 'first', 'last'] as const).map((k, i, arr) => arr[(i + round) % 3]!);
      for (const k of order) {
        const other = kinds[k];
        const t = process.hrtime.bigint();
        for (let i = 0; i < BATCH; i++) sameHash(a, other);
        samples[k]!.push(Number(process.hrtime.bigint() - t) / BATCH);
      }
    }
    const m = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, median(v)]));
    const lo = Math.min(...Object.values(m));
    const hi = Math.max(...Object.values(m));
    // Generous: a data-dependent compare of 32 bytes is itself only a few ns apart, so this is a
    // guard against a gross regression (an early exit around a slow step), not a proof.
    assert.ok(hi / lo < 1.5, `medians in ns per compare: ${JSON.stringify(m)}`);
  });
});

describe('login and KDF answers do not tell whether an account exists', () => {
  let server: TestServer;
  let known: Client;
  before(async () => {
    server = await startServer({}, {}, 'sqlite');
    known = await signup(server, nick('real'));
  });
  after(async () => {
    await server.close();
  });

  async function login(n: string, authKey: string) {
    const c = new Client(server);
    const t = performance.now();
    const r = await c.post('/api/login', { nick: n, authKey });
    return { r, ms: performance.now() - t };
  }

  test('an unknown nick and a wrong key get the same status, headers and body', async () => {
    const wrong = await login(known.nick, b64(32));
    const unknown = await login(nick('ghost'), b64(32));
    assert.equal(wrong.r.status, 401);
    assert.equal(unknown.r.status, wrong.r.status);
    assert.equal(unknown.r.text, wrong.r.text);
    const names = (h: Headers) => {
      const out: string[] = [];
      h.forEach((_v, k) => out.push(k));
      return out.filter((k) => k !== 'date').sort();
    };
    assert.deepEqual(names(unknown.r.headers), names(wrong.r.headers));
    for (const k of names(wrong.r.headers)) if (k !== 'content-length') assert.equal(unknown.r.headers.get(k), wrong.r.headers.get(k), k);
    assert.equal(unknown.r.headers.get('content-length'), wrong.r.headers.get('content-length'));
  });

  test('an unknown nick and a wrong key take the same time, within noise', async () => {
    const wrong: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 60; i++) {
      // Interleaved, alternating which goes first.
      const pair = i % 2 === 0 ? [true, false] : [false, true];
      for (const isKnown of pair) {
        const { r, ms } = await login(isKnown ? known.nick : nick('ghost'), b64(32));
        assert.equal(r.status, 401);
        (isKnown ? wrong : unknown).push(ms);
      }
    }
    const mw = median(wrong);
    const mu = median(unknown);
    assert.ok(Math.abs(mw - mu) < Math.max(3, 0.5 * Math.min(mw, mu)), `medians: wrong key ${mw.toFixed(2)} ms, unknown nick ${mu.toFixed(2)} ms`);
  });

  test('a KDF decoy has the shape, parameter values and salt length of a real answer, and the same time', async () => {
    const n = nick('kdfreal');
    const reg = registerBody(n);
    const real = { ...reg, kdf: { alg: 'argon2id', salt: b64(16), m: KDF_DEFAULTS.m, t: KDF_DEFAULTS.t, p: KDF_DEFAULTS.p } };
    assert.equal((await new Client(server).post('/api/register', real)).status, 201);
    const a = await new Client(server).get(`/api/kdf?nick=${n}`);
    const d = await new Client(server).get(`/api/kdf?nick=${nick('nobody')}`);
    assert.equal(a.status, 200);
    assert.equal(d.status, 200);
    assert.deepEqual(Object.keys(d.json), Object.keys(a.json), 'same fields in the same order');
    assert.deepEqual({ ...d.json, salt: null }, { ...a.json, salt: null }, 'same parameter values as an account made with the defaults');
    assert.deepEqual({ ...d.json, salt: null }, { alg: KDF_DEFAULTS.alg, m: KDF_DEFAULTS.m, t: KDF_DEFAULTS.t, p: KDF_DEFAULTS.p, salt: null });
    assert.equal(decodeB64url(d.json.salt)?.length, 16);
    assert.equal(d.text.length, a.text.length);
    assert.equal(d.headers.get('content-type'), a.headers.get('content-type'));

    const times: Record<'real' | 'decoy', number[]> = { real: [], decoy: [] };
    for (let i = 0; i < 60; i++) {
      for (const k of i % 2 === 0 ? (['real', 'decoy'] as const) : (['decoy', 'real'] as const)) {
        const t = performance.now();
        const r = await fetch(`${server.url}/api/kdf?nick=${k === 'real' ? n : nick('nobody')}`);
        await r.text();
        times[k].push(performance.now() - t);
      }
    }
    const mr = median(times.real);
    const md = median(times.decoy);
    assert.ok(Math.abs(mr - md) < Math.max(3, 0.5 * Math.min(mr, md)), `medians: real ${mr.toFixed(2)} ms, decoy ${md.toFixed(2)} ms`);
  });

  test('decoys are stable per nick across calls, and differ between nicks', async () => {
    const n = nick('ghost');
    const first = (await new Client(server).get(`/api/kdf?nick=${n}`)).json;
    for (let i = 0; i < 5; i++) assert.deepEqual((await new Client(server).get(`/api/kdf?nick=${n}`)).json, first);
    const other = (await new Client(server).get(`/api/kdf?nick=${n}x`)).json;
    assert.notEqual(other.salt, first.salt);
  });
});

test('decoys are the same after a restart (the server secret is kept in the database)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-decoy-'));
  const config = parseConfig(
    { PORT: '0', ORIGIN: 'http://svc.test', DATABASE_URL: `sqlite:${join(dir, 'svc.db')}`, LOG_LEVEL: 'silent' },
    { webRoot: dir, build: { revision: 'test', commitTime: null } },
  );
  const nicks = ['ghost_one', 'ghost_two', `g${randomBytes(4).toString('hex')}`];
  const read = async () => {
    const app = await createApp(config);
    try {
      const out: unknown[] = [];
      for (const n of nicks) out.push((await app.fastify.inject({ method: 'GET', url: `/api/kdf?nick=${n}` })).json());
      return out;
    } finally {
      await app.close(10);
    }
  };
  try {
    const before = await read();
    const afterRestart = await read();
    assert.deepEqual(afterRestart, before);
    for (const k of before as { salt: string }[]) assert.equal(decodeB64url(k.salt)?.length, 16);
    // A fresh database has a fresh secret: its decoys are different.
    rmSync(join(dir, 'svc.db'), { force: true });
    rmSync(join(dir, 'svc.db-wal'), { force: true });
    rmSync(join(dir, 'svc.db-shm'), { force: true });
    const fresh = (await read()) as { salt: string }[];
    assert.notEqual(fresh[0]!.salt, (before as { salt: string }[])[0]!.salt);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// Reused, not repeated: only SHA-256 of session tokens is stored and the cookie attributes are
// tested in test/api/accounts-session.test.ts; the push SSRF rules in test/push/ssrf.test.ts.
