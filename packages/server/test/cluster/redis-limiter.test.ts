/**
 * The shared limiter on Redis (limits/redis.ts) with several buckets per attempt, as login uses
 * them (docs/API.md): a refused attempt counts in no bucket, so a flood of random nicks from
 * one address stops creating keys once that address's bucket is full.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { RedisLimiter } from '../../src/limits/redis.js';
import type { Bucket } from '../../src/limits/types.js';
import { dropRedisPrefix, testRedisUrl } from '@svc/testkit/modes';

const login = (ip: string, nick: string): Bucket[] => [
  { key: `login:${ip}\0${nick}`, limit: 10, windowMs: 600_000 },
  { key: `login-ip:${ip}`, limit: 100, windowMs: 600_000 },
];

async function keysUnder(prefix: string): Promise<number> {
  const r = new Redis(testRedisUrl);
  try {
    return (await r.keys(`${prefix}*`)).length;
  } finally {
    await r.quit();
  }
}

test('Redis limiter: 1,000 random nicks from one address, the per-IP bucket refuses after 100 and the refused attempts add no key', async () => {
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const l = new RedisLimiter(new Redis(testRedisUrl), prefix, 'secret');
  try {
    for (let i = 0; i < 100; i++) assert.equal(await l.hitAll(login('203.0.113.9', `guess${i}`)), 0, `attempt ${i + 1}`);
    for (let i = 100; i < 1000; i++) {
      const wait = await l.hitAll(login('203.0.113.9', `guess${i}`));
      assert.ok(wait >= 1 && wait <= 600, `wait ${wait}`);
    }
    assert.equal(await keysUnder(prefix), 101);
    assert.equal(await l.hitAll(login('203.0.113.10', 'guess0')), 0, 'another address has its own bucket');
  } finally {
    await l.close();
    await dropRedisPrefix(prefix);
  }
});

test('Redis limiter: an attempt refused by one bucket is counted in none, and the wait is the longest among the full buckets', async () => {
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const l = new RedisLimiter(new Redis(testRedisUrl), prefix, 'secret');
  try {
    const a: Bucket = { key: 'a', limit: 1, windowMs: 10_000 };
    const b: Bucket = { key: 'b', limit: 3, windowMs: 60_000 };
    assert.equal(await l.hitAll([a, b]), 0);
    const w = await l.hitAll([a, b]);
    assert.ok(w >= 9 && w <= 10, `a is full for about 10 s, got ${w}`);
    assert.equal(await l.hit('b', 3, 60_000), 0);
    assert.equal(await l.hit('b', 3, 60_000), 0, 'the refused attempt did not count in b');
    const both = await l.hitAll([a, b]);
    assert.ok(both >= 59 && both <= 60, `both full: the longer wait, got ${both}`);
  } finally {
    await l.close();
    await dropRedisPrefix(prefix);
  }
});

test('Redis limiter: when Redis has forgotten the script (a restart, SCRIPT FLUSH), the next hit loads it again and still counts and refuses', async () => {
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const l = new RedisLimiter(new Redis(testRedisUrl), prefix, 'secret');
  const admin = new Redis(testRedisUrl);
  try {
    assert.equal(await l.hit('k', 2, 60_000), 0);
    await admin.script('FLUSH');
    assert.equal(await l.hit('k', 2, 60_000), 0, 'the second hit counts after the flush');
    const wait = await l.hit('k', 2, 60_000);
    assert.ok(wait >= 59 && wait <= 60, `the third is refused, got ${wait}`);
    assert.equal(await keysUnder(prefix), 1);
  } finally {
    await admin.quit();
    await l.close();
    await dropRedisPrefix(prefix);
  }
});

test('Redis limiter: attempts made together go out as one script call and are judged in order, each seeing the ones before it, as separate calls would be', async () => {
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const l = new RedisLimiter(new Redis(testRedisUrl), prefix, 'secret');
  const spied = l as unknown as { hitCommand: (...a: unknown[]) => Promise<unknown> };
  const real = spied.hitCommand;
  let calls = 0;
  spied.hitCommand = (...a) => {
    calls++;
    return real(...a);
  };
  try {
    const a: Bucket = { key: 'a', limit: 3, windowMs: 60_000 };
    const b: Bucket = { key: 'b', limit: 1, windowMs: 10_000 };
    const waits = await Promise.all([l.hit('a', 3, 60_000), l.hitAll([a, b]), l.hitAll([a, b]), l.hit('a', 3, 60_000), l.hit('a', 3, 60_000)]);
    assert.equal(calls, 1, 'one script call for the five attempts');
    assert.deepEqual(waits.slice(0, 2), [0, 0], 'the first two fit');
    assert.ok(waits[2] >= 9 && waits[2] <= 10, `the third finds b full (about 10 s) and counts nowhere, got ${waits[2]}`);
    assert.equal(waits[3], 0, 'so the fourth is the third hit of a, and fits');
    assert.ok(waits[4] >= 59 && waits[4] <= 60, `the fifth finds a full, got ${waits[4]}`);
    assert.equal(await keysUnder(prefix), 2);
  } finally {
    spied.hitCommand = real;
    await l.close();
    await dropRedisPrefix(prefix);
  }
});

test('Redis limiter: when the script call fails, every attempt in it fails, and the next attempts go out again', async () => {
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const l = new RedisLimiter(new Redis(testRedisUrl), prefix, 'secret');
  const spied = l as unknown as { hitCommand: (...a: unknown[]) => Promise<unknown> };
  const real = spied.hitCommand;
  try {
    spied.hitCommand = () => Promise.reject(new Error('connection lost'));
    const failed = await Promise.allSettled([l.hit('k', 2, 60_000), l.hit('k', 2, 60_000)]);
    assert.deepEqual(
      failed.map((r) => r.status),
      ['rejected', 'rejected'],
    );
    spied.hitCommand = real;
    assert.deepEqual(await Promise.all([l.hit('k', 2, 60_000), l.hit('k', 2, 60_000)]), [0, 0], 'the failed attempts counted nothing');
    const wait = await l.hit('k', 2, 60_000);
    assert.ok(wait >= 59 && wait <= 60, `the third is refused, got ${wait}`);
  } finally {
    spied.hitCommand = real;
    await l.close();
    await dropRedisPrefix(prefix);
  }
});
