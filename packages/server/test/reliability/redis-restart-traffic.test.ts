/**
 * Redis killed and started again while two instances carry traffic: no envelope answered 202 is
 * lost, none reaches a device it was not sent to, and none is doubled except where docs/API.md
 * allows it (a queued envelope stays queued until acknowledged, and every stream opened before
 * the ack replays it).
 *
 * Two instances on one PostgreSQL schema share a private `redis-server` (never the shared one),
 * reached through a proxy that, after the restart, holds each SUBSCRIBE for a while: the window
 * between Redis' return and the moment each instance has its subscription back is then wide
 * enough for streams and sends to fall into it, as they may on a slow network or a busy server.
 * Two senders post through one instance each; each of two recipients has a device streaming from
 * each instance, so every envelope reaches one device on the sender's instance and one across the
 * bus. Receivers acknowledge what they get, and open their stream again whenever it ends (the
 * service ends streams while its bus is down), as the client SDK does. Redis is killed with
 * SIGKILL and restarted on its port mid-traffic; traffic goes on through the return, the
 * reconnection of every Redis client and the reopening of every stream.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, Stream, via, addDevice, dmBody, instance, nick, signup, startServer, type TestServer } from '@svc/testkit/harness';
import { RedisChild, SUBSCRIBE } from './redis-child.js';
import { TcpProxy } from './tcp-proxy.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One stream a receiver opened: when it asked, and the envelope ids it got, in order. */
interface Opened {
  askedAt: number;
  ids: string[];
}

/**
 * A device that keeps a stream open on one instance, acknowledges what arrives, and opens the
 * stream again (at once, then every 50 ms while refused) whenever it ends.
 */
class Receiver {
  readonly streams: Opened[] = [];
  /** When the ack of each id was answered 204. */
  readonly ackedAt = new Map<string, number>();
  /** Envelopes as received: id → the envelope's JSON, to check where each was addressed. */
  readonly envelopes = new Map<string, { to: { dm?: string }; from: string }>();
  current: Stream | null = null;
  private stopping = false;
  private loop: Promise<void> | null = null;
  private acking: Promise<void> | null = null;
  private unacked: string[] = [];

  constructor(
    readonly label: string,
    readonly client: Client,
    readonly device: string,
  ) {}

  start(): Promise<void> {
    this.loop = this.run();
    this.acking = this.ackLoop();
    return this.untilReady(5000);
  }

  async untilReady(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(this.current && !this.current.ended && this.current.events.some((e) => e.event === 'ready'))) {
      assert.ok(Date.now() < deadline, `${this.label}: a stream reached ready`);
      await sleep(20);
    }
  }

  has(id: string): boolean {
    return this.envelopes.has(id);
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      const askedAt = Date.now();
      const s = await Stream.open(this.client, this.device);
      if (s.status !== 200) {
        await sleep(50);
        continue;
      }
      const opened: Opened = { askedAt, ids: [] };
      this.streams.push(opened);
      this.current = s;
      let seen = 0;
      while (!this.stopping) {
        await s.until((ev) => ev.length > seen, 200);
        for (; seen < s.events.length; seen++) {
          const e = s.events[seen]!;
          if (e.event !== 'msg') continue;
          opened.ids.push(e.id!);
          this.envelopes.set(e.id!, e.json);
          this.unacked.push(e.id!);
        }
        if (s.ended) break;
      }
      s.close();
    }
  }

  /** Acknowledges in batches, as clients do; an ack that fails is sent again with the next batch. */
  private async ackLoop(): Promise<void> {
    while (!this.stopping) {
      await sleep(100);
      if (this.unacked.length === 0) continue;
      const ids = this.unacked.splice(0, 500);
      const r = await this.client.post('/api/ack', { ids }, { device: this.device }).catch(() => null);
      if (r?.status === 204) {
        const at = Date.now();
        for (const id of ids) this.ackedAt.set(id, at);
      } else this.unacked.unshift(...ids);
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.current?.close();
    await this.loop;
    await this.acking;
  }
}

/** Posts DMs one after another, each to the next recipient in turn, until stopped. */
class Sender {
  /** Every envelope it tried: id → recipient nick and the answer's status (0: no answer). */
  readonly sent = new Map<string, { to: string; status: number }>();
  private stopping = false;
  private loop: Promise<void> | null = null;

  constructor(
    readonly client: Client,
    readonly device: string,
    readonly recipients: string[],
  ) {}

  start(): void {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    for (let i = 0; !this.stopping; i++) {
      const to = this.recipients[i % this.recipients.length]!;
      const body = dmBody(to);
      const r = await this.client.post('/api/messages', body, { device: this.device }).catch(() => null);
      this.sent.set(body.id, { to, status: r?.status ?? 0 });
      await sleep(10);
    }
  }

  accepted(): [string, string][] {
    return [...this.sent].filter(([, s]) => s.status === 202).map(([id, s]) => [id, s.to]);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.loop;
  }
}

const redis = new RedisChild();
let proxy: TcpProxy;
let server: TestServer;
before(async () => {
  await redis.start();
  proxy = new TcpProxy('127.0.0.1', redis.port);
  await proxy.start();
  server = await startServer({ REDIS_URL: `redis://127.0.0.1:${proxy.port}` }, {}, 'postgres-2');
});
after(async () => {
  await server?.close();
  await proxy?.close();
  await redis.stop();
});

test('Redis killed and restarted while two instances carry traffic: every envelope answered 202 reaches each target device, none goes astray, none is doubled after its ack', async () => {
  const senders: Sender[] = [];
  const receivers: Receiver[] = [];
  const recipients: Client[] = [];
  for (let i = 0; i < 2; i++) recipients.push(await signup(instance(server, 0), nick(`rr${i}`)));
  for (const r of recipients) {
    for (let i = 0; i < 2; i++) receivers.push(new Receiver(`${r.nick} on instance ${i}`, via(server, r, i), await addDevice(r)));
  }
  for (let i = 0; i < 2; i++) {
    const c = via(server, await signup(instance(server, 0), nick(`rs${i}`)), i);
    senders.push(
      new Sender(
        c,
        await addDevice(c),
        recipients.map((r) => r.nick),
      ),
    );
  }
  try {
    await carryTraffic(senders, receivers, recipients);
  } finally {
    // A failed check must not leave the loops running (they would keep the process alive).
    await Promise.all([...senders, ...receivers].map((x) => x.stop()));
  }
});

async function carryTraffic(senders: Sender[], receivers: Receiver[], recipients: Client[]): Promise<void> {
  await Promise.all(receivers.map((r) => r.start()));
  for (const s of senders) s.start();

  await sleep(1500);
  await redis.stop();
  proxy.hold((chunk) => SUBSCRIBE.test(chunk.toString('latin1')), 1500);
  await sleep(1000);
  await redis.start();
  // Traffic goes on through the return: the Redis clients reconnect and resubscribe on their own
  // schedules, and the receivers open their streams again as soon as an instance lets them.
  await sleep(4000);
  await Promise.all(senders.map((s) => s.stop()));

  const accepted = senders.flatMap((s) => s.accepted());
  /** Every envelope tried, answered or not: id → its sender and recipient. */
  const tried = new Map(senders.flatMap((s) => [...s.sent].map(([id, v]) => [id, { from: s.client.nick, to: v.to }] as const)));
  assert.ok(accepted.length > 50, `traffic flowed: ${accepted.length} envelopes accepted`);
  const targets = (to: string) => receivers.filter((r) => r.client.nick === to);

  // Every accepted envelope reaches both devices of its recipient. A receiver whose stream stays
  // open must get it live: nothing here reconnects a healthy stream to fetch what it missed.
  const deadline = Date.now() + 20_000;
  const missing = () =>
    accepted.flatMap(([id, to]) =>
      targets(to)
        .filter((r) => !r.has(id))
        .map((r) => `${id} at ${r.label}`),
    );
  while (missing().length > 0 && Date.now() < deadline) await sleep(100);
  assert.deepEqual(missing(), [], 'every envelope answered 202 reached every target device');

  // The streams are back: an envelope now crosses instances live, on the stream that is open.
  await Promise.all(receivers.map((r) => r.untilReady(10_000)));
  const live = receivers.map((r) => ({ r, s: r.current! }));
  const last = senders.map((s) => ({ s, body: dmBody(recipients[0]!.nick) }));
  for (const { s, body } of last) {
    const res = await s.client.post('/api/messages', body, { device: s.device });
    assert.equal(res.status, 202, res.text);
    tried.set(body.id, { from: s.client.nick, to: recipients[0]!.nick });
  }
  for (const { r, s } of live.filter(({ r }) => r.client.nick === recipients[0]!.nick)) {
    for (const { body } of last) assert.ok(await s.until((ev) => ev.some((e) => e.id === body.id), 5000), `${r.label} got ${body.id} live`);
    assert.equal(s.ended, false, `${r.label}: the same stream carried it`);
  }
  await Promise.all(receivers.map((r) => r.stop()));

  for (const r of receivers) {
    // None astray: a device gets only envelopes sent to its account, from the sender that sent them.
    for (const [id, env] of r.envelopes) {
      assert.deepEqual({ from: env.from, to: env.to.dm }, tried.get(id), `${r.label}: ${id} as it was sent`);
      assert.equal(env.to.dm, r.client.nick, `${r.label}: ${id} is addressed to this account`);
    }
    // None doubled within one stream; a later stream carries it again only if it was opened
    // before the envelope's ack was answered (the replay of a queue that still held it).
    const firstAt = new Map<string, number>();
    r.streams.forEach((st, k) => {
      assert.equal(new Set(st.ids).size, st.ids.length, `${r.label}: stream ${k} carried no envelope twice`);
      for (const id of st.ids) {
        const acked = r.ackedAt.get(id);
        if (firstAt.has(id)) assert.ok(acked === undefined || st.askedAt < acked, `${r.label}: ${id} came again on a stream opened after its ack`);
        else firstAt.set(id, k);
      }
    });
  }
  const reopened = receivers.map((r) => r.streams.length);
  assert.ok(
    reopened.every((n) => n >= 2),
    `every stream ended with the outage and was opened again (${reopened.join(', ')})`,
  );
}
