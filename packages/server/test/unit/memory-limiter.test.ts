/**
 * The in-process limiter (limits/memory.ts): exact sliding windows, several buckets per attempt
 * (login: per (IP, nick) and per IP, docs/API.md), and memory bounded whatever keys a flood uses.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { MemoryLimiter, MEMORY_LIMITER_MAX_KEYS } from '../../src/limits/memory.js';
import type { Bucket } from '../../src/limits/types.js';

const WINDOW = 600_000;
const login = (ip: string, nick: string): Bucket[] => [
  { key: `login:${ip}\0${nick}`, limit: 10, windowMs: WINDOW },
  { key: `login-ip:${ip}`, limit: 100, windowMs: WINDOW },
];
// Distinct values, as random ones would be, without the cost of 100,000 calls to the random source.
const run = randomBytes(4).toString('hex');
let counter = 0;
const randomNick = () => `n${run}${(++counter).toString(36)}`;
const randomIp = () => `2001:db8::${run.slice(0, 4)}:${(++counter).toString(16)}`;

test('a flood of 100,000 random nicks from random addresses keeps the limiter under its fixed cap of keys', async () => {
  const l = new MemoryLimiter();
  let largest = 0;
  for (let i = 0; i < 100_000; i++) {
    assert.equal(await l.hitAll(login(randomIp(), randomNick())), 0);
    largest = Math.max(largest, l.size);
  }
  assert.ok(largest <= MEMORY_LIMITER_MAX_KEYS, `held ${largest} keys, cap ${MEMORY_LIMITER_MAX_KEYS}`);
  assert.ok(MEMORY_LIMITER_MAX_KEYS < 100_000);
  await l.close();
});

test('100,000 random nicks from one address: the per-IP bucket refuses after 100 and the refused attempts add no key', async () => {
  const l = new MemoryLimiter();
  for (let i = 0; i < 100; i++) assert.equal(await l.hitAll(login('203.0.113.7', randomNick())), 0, `attempt ${i + 1}`);
  for (let i = 0; i < 99_900; i++) {
    const wait = await l.hitAll(login('203.0.113.7', randomNick()));
    assert.ok(wait >= 1 && wait <= WINDOW / 1000, `wait ${wait}`);
  }
  assert.equal(l.size, 101, 'one key per nick tried before the bucket filled, plus the bucket');
  assert.equal(await l.hitAll(login('203.0.113.8', randomNick())), 0, 'another address has its own bucket');
  await l.close();
});

test('a key under attack outlives a flood that evicts: every attempt on it keeps it the most recent', async () => {
  const l = new MemoryLimiter(Date.now, 1000);
  for (let i = 0; i < 100; i++) await l.hitAll(login('198.51.100.1', randomNick()));
  for (let i = 0; i < 5_000; i++) {
    await l.hitAll(login(randomIp(), randomNick()));
    assert.ok((await l.hitAll(login('198.51.100.1', randomNick()))) > 0, 'the attacker stays refused');
  }
  assert.ok(l.size <= 1000);
  await l.close();
});

test('an attempt refused by one bucket is counted in none, and the wait is the longest among the full buckets', async () => {
  let now = 1_000_000;
  const l = new MemoryLimiter(() => now);
  const a: Bucket = { key: 'a', limit: 1, windowMs: 10_000 };
  const b: Bucket = { key: 'b', limit: 3, windowMs: 60_000 };
  assert.equal(await l.hitAll([a, b]), 0);
  now += 1000;
  assert.equal(await l.hitAll([a, b]), 9, 'a is full for 9 more seconds');
  assert.equal(await l.hit('b', 3, 60_000), 0);
  assert.equal(await l.hit('b', 3, 60_000), 0, 'the refused attempt did not count in b');
  assert.equal(await l.hitAll([a, b]), 59, 'both full: the longer wait');
  now += 9000;
  assert.equal(await l.hitAll([a, b]), 50, 'a has room again, b still full');
  now += 50_000;
  assert.equal(await l.hitAll([a, b]), 0);
  await l.close();
});
