/**
 * Streams cannot hold the server (issue 6, part 4): a reader that never reads is dropped once
 * 1 MiB waits for it (bus/streams.ts MAX_STREAM_BUFFER), also while its replay is stuck, and loses
 * nothing by it; the number of open streams of one account is bounded by one stream per device
 * and 32 devices per account.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { LIMITS } from '@svc/protocol';
import { Stream, addDevice, ct, dmBody, nick, signup, startServer, userWithDevices, type Client, type TestServer } from '@svc/testkit/harness';

/** About 24 KiB of ciphertext: a message body just under the 32 KiB request limit. */
const BIG_CT_BYTES = 18_000;

/** Opens a stream over a raw socket, waits for the response head, then never reads again. */
async function stalledReader(server: TestServer, c: Client, device: string): Promise<Socket> {
  const port = Number(new URL(server.url).port);
  const sock = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    sock.once('connect', () => {
      sock.write(`GET /api/events?device=${device} HTTP/1.1\r\nhost: x\r\ncookie: ${c.cookie}\r\n\r\n`);
    });
    let head = '';
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      if (head.includes('\r\n\r\n')) {
        sock.off('data', onData);
        sock.pause();
        if (!head.startsWith('HTTP/1.1 200')) reject(new Error(head));
        else resolve();
      }
    };
    sock.on('data', onData);
    sock.once('error', reject);
  });
  return sock;
}

async function sendBig(from: Client, fromDevice: string, to: string): Promise<string> {
  const body = { ...dmBody(to), ct: ct(BIG_CT_BYTES) };
  const r = await from.post('/api/messages', body, { device: fromDevice });
  assert.equal(r.status, 202, r.text);
  return body.id;
}

describe('stream resource limits (sqlite)', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({}, {}, 'sqlite');
  });
  after(async () => {
    await server.close();
  });

  test('a live stream whose reader never reads is dropped after a bounded buffer, and what it missed stays queued', async () => {
    const {
      c: alice,
      devices: [aDev],
    } = await userWithDevices(server, 1);
    const {
      c: bob,
      devices: [bDev],
    } = await userWithDevices(server, 1);
    const sock = await stalledReader(server, bob, bDev!);
    try {
      for (let i = 0; i < 50 && !server.hasStream(bDev!); i++) await Stream.settle(20);
      assert.ok(server.hasStream(bDev!), 'the stream is open');
      const sent: string[] = [];
      // Kernel socket buffers absorb a few MiB first; the bound applies to what waits beyond them.
      while (server.hasStream(bDev!) && sent.length < 1200) sent.push(await sendBig(alice, aDev!, bob.nick));
      assert.ok(!server.hasStream(bDev!), `the stream was dropped (after ${sent.length} messages of ~${BIG_CT_BYTES} bytes)`);
      const s = await Stream.open(bob, bDev!);
      assert.ok(await s.ready(20_000), 'a new stream replays the queue');
      const got = new Set(s.named('msg').map((e) => e.id!));
      s.close();
      assert.deepEqual(
        sent.filter((id) => !got.has(id)),
        [],
        'nothing was lost by the drop',
      );
    } finally {
      sock.destroy();
    }
  });

  test('a reader stuck in its replay cannot make live events pile up: the stream is dropped once 1 MiB is held', async () => {
    const {
      c: alice,
      devices: [aDev],
    } = await userWithDevices(server, 1);
    const {
      c: bob,
      devices: [bDev],
    } = await userWithDevices(server, 1);
    // A queue far larger than the socket buffers, so the replay blocks on the reader.
    for (let i = 0; i < 400; i++) await sendBig(alice, aDev!, bob.nick);
    const sock = await stalledReader(server, bob, bDev!);
    try {
      for (let i = 0; i < 50 && !server.hasStream(bDev!); i++) await Stream.settle(20);
      assert.ok(server.hasStream(bDev!), 'the stream is open and replaying');
      let live = 0;
      while (server.hasStream(bDev!) && live < 200) {
        await sendBig(alice, aDev!, bob.nick);
        live++;
      }
      assert.ok(!server.hasStream(bDev!), `dropped after ${live} live messages held during the replay`);
      assert.ok(live * BIG_CT_BYTES * 1.3 < 4 * 1024 * 1024, 'well before the held frames grew large');
    } finally {
      sock.destroy();
    }
  });

  test('open streams per account are bounded: one per device, at most 32 devices', async () => {
    const c = await signup(server, nick('many'));
    const devices: string[] = [];
    for (let i = 0; i < LIMITS.devicesPerAccount; i++) devices.push(await addDevice(c));
    const extra = await c.post('/api/devices', { id: 'one-device-too-many' });
    assert.equal(extra.status, 409);
    assert.equal(extra.json.error, 'limit_reached');

    const streams: Stream[] = [];
    try {
      // Every device twice: the second stream of a device closes the first.
      for (const d of [...devices, ...devices]) streams.push(await Stream.open(c, d));
      for (const s of streams) assert.equal(s.status, 200);
      const first = streams.slice(0, devices.length);
      for (const s of first) assert.ok(await s.closedByServer(3000), 'the older stream of the device was closed');
      const mine = server.app.streams.connections().filter((x) => x.nick === c.nick);
      assert.equal(mine.length, LIMITS.devicesPerAccount);
    } finally {
      for (const s of streams) s.close();
    }
  });
});

test('a client that goes away mid-replay stops the replay: the rest of its queue is not read', async () => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { SqliteStore } = await import('../../src/store/sqlite/index.js');
  const dir = mkdtempSync(join(tmpdir(), 'svc-replay-'));
  const inner = SqliteStore.open(join(dir, 'svc.db'));
  let pagesRead = 0;
  // The real store, with its queue reads counted.
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'readQueue') return (...a: Parameters<typeof inner.readQueue>) => (pagesRead++, target.readQueue(...a));
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(target) : v;
    },
  });
  const server = await startServer({}, { store });
  try {
    const {
      c: alice,
      devices: [aDev],
    } = await userWithDevices(server, 1);
    const {
      c: bob,
      devices: [bDev],
    } = await userWithDevices(server, 1);
    // Three pages of replay (1000 each), each message large enough that a page fills any socket buffer.
    for (let i = 0; i < 2100; i++) {
      const r = await alice.post('/api/messages', { ...dmBody(bob.nick), ct: ct(2000) }, { device: aDev! });
      assert.equal(r.status, 202);
    }
    pagesRead = 0;
    const sock = await stalledReader(server, bob, bDev!);
    sock.destroy();
    await Stream.settle(1000);
    // What the kernel's socket buffers took may let the first page through; the third is never read.
    assert.ok(pagesRead < 3, `the replay stopped early (${pagesRead} of 3 pages read)`);
    assert.equal(server.hasStream(bDev!), false, 'the stream is not left registered');
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
