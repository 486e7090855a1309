/** The in-process record of where each nick signed in from: its expiry and its bounds on memory. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KNOWN_FOR_MS, KNOWN_PER_NICK, MemoryKnownAddresses } from '../../src/limits/known.js';

test('a known address is known for 30 days after its last sign-in, and then forgotten', async () => {
  const clock = { now: 1_000_000 };
  const known = new MemoryKnownAddresses(() => clock.now);
  await known.remember('alice', '203.0.113.1');
  assert.equal(await known.has('alice', '203.0.113.1'), true);
  assert.equal(await known.has('alice', '203.0.113.2'), false, 'another address');
  assert.equal(await known.has('bob', '203.0.113.1'), false, 'another nick');
  clock.now += KNOWN_FOR_MS - 1;
  await known.remember('alice', '203.0.113.9');
  assert.equal(await known.has('alice', '203.0.113.1'), true, 'a millisecond before 30 days');
  clock.now += 1;
  assert.equal(await known.has('alice', '203.0.113.1'), false, 'at 30 days');
  assert.equal(await known.has('alice', '203.0.113.9'), true, 'the later sign-in counts from its own time');
  assert.equal(known.size, 1, 'the expired entry is dropped');
});

test('at most 32 addresses per nick are kept, the newest; signing in again renews an address', async () => {
  const known = new MemoryKnownAddresses();
  await known.remember('alice', 'first');
  for (let i = 0; i < KNOWN_PER_NICK - 1; i++) await known.remember('alice', `a${i}`);
  await known.remember('alice', 'first');
  await known.remember('alice', 'newest');
  assert.equal(known.size, KNOWN_PER_NICK);
  assert.equal(await known.has('alice', 'first'), true, 'renewed, so not the oldest');
  assert.equal(await known.has('alice', 'a0'), false, 'the oldest went');
  assert.equal(await known.has('alice', 'newest'), true);
});

test('a flood of sign-ins keeps the record under its cap of entries, dropping the nicks remembered longest ago', async () => {
  const known = new MemoryKnownAddresses(Date.now, 1_000);
  await known.remember('owner', 'home');
  for (let i = 0; i < 10_000; i++) await known.remember(`n${i}`, `addr${i % 7}`);
  assert.ok(known.size <= 1_000, `held ${known.size}`);
  assert.equal(await known.has('owner', 'home'), false, 'the oldest nick went first');
  assert.equal(await known.has('n9999', 'addr3'), true, 'the newest stays');
});
