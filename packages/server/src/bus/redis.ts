/**
 * The bus between instances (REDIS_URL set). Every instance subscribes to one channel; what an
 * instance publishes is applied to its own streams at once and, on arrival, by every other
 * instance to its local streams only, never relayed again (so no event loops or doubles).
 *
 * The deliveries of one event-loop round go out as one PUBLISH (see deliver()): under load a
 * round holds the sends of many requests, and Redis, the subscribers and this process then handle
 * one message instead of one per send.
 *
 * Presence: a key per device with an open stream, holding the instance and connection that own
 * it, with a TTL refreshed while the stream is open. A crashed instance stops refreshing, so its
 * devices count as offline once the TTL runs out (within PRESENCE_TTL_S), and get pushes again.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Bus, CloseSelector, Delivery } from './types.js';
import type { LocalStreams, StreamConn } from './streams.js';

/** A device counts as online this long after its instance last refreshed it (docs/API.md: offline within a minute). */
export const PRESENCE_TTL_S = 60;
/** At most this many devices are remembered as having missed an event during an outage. */
const MAX_MISSED = 100_000;
const MAX_PENDING_CLOSES = 10_000;
/** Most deliveries in one PUBLISH: a larger round is split, so that no one message grows without bound. */
const MAX_DELIVERIES_PER_PUBLISH = 500;

/** A stream is refused when the subscription does not answer its fence within this time (a hung Redis). */
const FENCE_TIMEOUT_MS = 2_000;

/** `at`: the publisher's clock when sent, for the bus-lag metric. */
type Wire = (
  { t: 'deliver'; from: string; d: Delivery[] } | { t: 'close'; from: string; sel: CloseSelector } | { t: 'attach'; from: string; device: string }
) & { at?: number };

/**
 * Re-arms a presence key only while it is unset or still names this connection: a newer stream
 * of the device on another instance may own it, and a plain SET would write this older
 * connection back over it (and its release would then delete the newer one's presence).
 */
const REFRESH_SCRIPT = `local v = redis.call('GET', KEYS[1]) if v == false or v == ARGV[1] then return redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2]) else return 0 end`;

/** Deletes a presence key only while it still names this connection (a newer stream may own it). */
const RELEASE_SCRIPT = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end`;

export interface RedisBusOptions {
  /** Connection for commands and publishing. */
  pub: Redis;
  /** A second connection, which Redis dedicates to the subscription. */
  sub: Redis;
  prefix: string;
  /** Presence lifetime; refreshed three times per lifetime. Tests shorten it. */
  presenceTtlS?: number;
  onError: (err: unknown, what: string) => void;
}

export class RedisBus implements Bus {
  readonly instanceId = randomBytes(8).toString('hex');
  private readonly ownFrom = `"from":"${this.instanceId}"`;
  private readonly channel: string;
  /** The presence value each local connection wrote, so that only its owner removes it. */
  private readonly tokens = new WeakMap<StreamConn, string>();
  private readonly refresher: NodeJS.Timeout;
  private readonly ttl: number;
  private closed = false;
  /**
   * Redis has confirmed this instance's subscription on the current connection. Only then may a
   * stream open here: an event published before Redis has the subscription reaches nobody.
   */
  private subscribed = false;
  /** Counts the subscriber's connections, so that a confirmation from an older one is ignored. */
  private connection = 0;
  /** Devices that missed a live `msg` because publishing failed (see unannounced()). */
  private readonly missed = new Set<string>();
  /** Stream closings (revocations) that could not be published yet: sent once Redis is back. */
  private readonly pendingCloses: CloseSelector[] = [];
  /** Deliveries of this round not yet published, and the promise their callers wait on. */
  private unpublished: Delivery[] = [];
  private published: { promise: Promise<void>; resolve: () => void } | null = null;
  /** Told how long each message from another instance took to arrive, in ms (metrics). */
  onLag: ((ms: number) => void) | null = null;

  private constructor(
    private readonly local: LocalStreams,
    private readonly o: RedisBusOptions,
  ) {
    this.channel = `${o.prefix}bus`;
    this.ttl = o.presenceTtlS ?? PRESENCE_TTL_S;
    this.refresher = setInterval(() => void this.refreshPresence(), (this.ttl * 1000) / 3);
    this.refresher.unref();
  }

  /**
   * Subscribes before returning, so no event published after start is missed. `sub` should not
   * resubscribe by itself (ioredis `autoResubscribe: false`): the bus does it, to know when.
   */
  static async start(local: LocalStreams, o: RedisBusOptions): Promise<RedisBus> {
    const bus = new RedisBus(local, o);
    o.sub.on('message', (channel: string, text: string) => {
      if (channel === bus.channel) bus.receive(text);
    });
    // Without the subscription this instance misses what others publish, so its streams would
    // silently stop getting live events. They end instead: clients reconnect, and the replay of
    // the queue (in the database) brings what they missed (docs/SECURITY.md).
    o.sub.on('close', () => {
      bus.subscribed = false;
      bus.connection++;
      bus.dropLocalStreams();
    });
    o.sub.on('ready', () => void bus.subscribe());
    o.pub.on('ready', () => void bus.flushPending());
    const connection = bus.connection;
    await o.sub.subscribe(bus.channel);
    if (connection === bus.connection) bus.subscribed = true;
    return bus;
  }

  /**
   * Subscribes again once the connection is back. A connection that is ready is not yet
   * subscribed: until Redis confirms, streams stay refused, since one opened in between would
   * replay its queue and then miss what others publish before the subscription arrives.
   */
  private async subscribe(): Promise<void> {
    const connection = this.connection;
    try {
      await this.o.sub.subscribe(this.channel);
    } catch (err) {
      // The connection went again; its next 'ready' subscribes anew.
      if (!this.closed) this.o.onError(err, 'bus resubscribe failed');
      return;
    }
    if (connection === this.connection && !this.closed) this.subscribed = true;
  }

  private presenceKey(deviceId: string): string {
    return `${this.o.prefix}online:${deviceId}`;
  }

  private receive(text: string): void {
    // What this instance published itself was applied when it was published: it is dropped
    // without parsing it (on one instance, every message). `"from":"<id>"` with bare quotes can
    // only be the top-level field: inside the event data, a string, every quote is escaped.
    if (text.includes(this.ownFrom)) return;
    let m: Wire;
    try {
      m = JSON.parse(text) as Wire;
    } catch (err) {
      this.o.onError(err, 'bus message not JSON');
      return;
    }
    if (m.from === this.instanceId) return; // applied locally when it was published
    if (typeof m.at === 'number') this.onLag?.(Date.now() - m.at);
    if (m.t === 'deliver') this.local.deliver(m.d);
    else if (m.t === 'close') this.local.closeWhere(m.sel);
    else if (m.t === 'attach') this.local.closeWhere({ devices: [m.device] });
  }

  private async publish(m: Wire): Promise<void> {
    // Deliveries still waiting for the end of the round go first: every message of this
    // instance reaches the others in the order it was asked for (one connection keeps order).
    if (m.t !== 'deliver') this.publishDeliveries();
    await this.o.pub.publish(this.channel, JSON.stringify({ ...m, at: Date.now() }));
  }

  async attach(conn: StreamConn): Promise<void> {
    // A stream opened while the subscription is down would miss other instances' events.
    if (!this.subscribed || this.o.sub.status !== 'ready') throw new Error('bus subscription is down');
    const connection = this.connection;
    await this.fence();
    // The connection may have gone during the PING (ioredis sends it again on the next one,
    // before the bus has subscribed there): a stream registered now would miss events.
    if (connection !== this.connection || !this.subscribed) throw new Error('bus subscription is down');
    this.local.add(conn);
    const token = `${this.instanceId}:${randomBytes(8).toString('hex')}`;
    this.tokens.set(conn, token);
    try {
      // Presence first, then tell the others to close their older stream of this device.
      await this.o.pub.set(this.presenceKey(conn.deviceId), token, 'EX', this.ttl);
      await this.publish({ t: 'attach', from: this.instanceId, device: conn.deviceId });
    } catch (err) {
      // Redis is unreachable: the stream is refused and leaves nothing registered behind.
      this.local.remove(conn);
      this.tokens.delete(conn);
      throw err;
    }
  }

  /**
   * Waits until every message Redis had published before now has reached this instance. A
   * request on another instance answers only once its events are published, but they reach this
   * instance's subscription some time later: a stream registered before they arrive would get
   * the events of actions its client saw finish before it opened (a `room` it then also reads in
   * `GET /api/rooms`). Redis answers a PING on the subscription after the messages it sent there
   * before it, so a stream registered once the answer is in gets only later events. What is
   * published between the PING and the registration is not lost: a `msg` is committed to the
   * queue before it is published, and the replay after the registration reads it; room changes
   * the client reads in `GET /api/rooms` after `ready` (docs/API.md).
   */
  private async fence(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      // The subscriber keeps its offline queue and has no command timeout (redis-client.ts).
      timer = setTimeout(() => reject(new Error('bus subscription did not answer')), FENCE_TIMEOUT_MS);
    });
    try {
      await Promise.race([this.o.sub.ping(), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Ends every stream of this instance (each releases its presence as it closes). */
  private dropLocalStreams(): void {
    if (this.closed) return;
    const devices = this.local.connections().map((c) => c.deviceId);
    if (devices.length > 0) this.local.closeWhere({ devices });
  }

  detach(conn: StreamConn): void {
    this.local.remove(conn);
    const token = this.tokens.get(conn);
    if (token === undefined) return;
    this.tokens.delete(conn);
    if (this.closed) return; // close() released every key at once
    this.o.pub
      .eval(RELEASE_SCRIPT, 1, this.presenceKey(conn.deviceId), token)
      .catch((err: unknown) => this.o.onError(err, 'presence release failed'));
  }

  /**
   * Applies the deliveries here at once and publishes them at the end of this event-loop round,
   * together with every other delivery asked for in the round, in the order asked (a `deliver`
   * message has always carried a list, so instances of an older version read it as before).
   * Resolves once the publish is done or has failed.
   */
  deliver(deliveries: Delivery[]): Promise<void> {
    this.local.deliver(deliveries);
    for (const d of deliveries) this.unpublished.push(d);
    if (this.published === null) {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      this.published = { promise, resolve };
      // After the poll phase, so that the sends answered in this round have all asked.
      setImmediate(() => this.publishDeliveries());
    }
    return this.published.promise;
  }

  /** Publishes the round's deliveries now (also before any other message, to keep the order). */
  private publishDeliveries(): void {
    const round = this.published;
    if (round === null) return;
    const all = this.unpublished;
    this.unpublished = [];
    this.published = null;
    const parts: Promise<void>[] = [];
    for (let i = 0; i < all.length; i += MAX_DELIVERIES_PER_PUBLISH) {
      const d = all.slice(i, i + MAX_DELIVERIES_PER_PUBLISH);
      // The envelopes are already committed to the queues: a device that misses the live event
      // gets it on its next replay, so a failed publish is logged rather than failing the request.
      parts.push(
        this.publish({ t: 'deliver', from: this.instanceId, d }).catch((err: unknown) => {
          this.o.onError(err, 'bus publish failed');
          this.unannounced(d);
        }),
      );
    }
    void Promise.all(parts).then(round.resolve);
  }

  /**
   * Remembers the devices whose event could not be published. Once the connection is back, their
   * streams on every instance are closed: the clients reconnect and the replay brings the
   * envelope, so it does not wait in the queue until some later reconnect, and nothing is doubled.
   */
  private unannounced(deliveries: Delivery[]): void {
    for (const d of deliveries) {
      if (d.event !== 'msg') continue; // room events are not queued; clients re-read rooms after `ready`
      for (const id of d.devices) if (this.missed.size < MAX_MISSED) this.missed.add(id);
    }
  }

  private async flushPending(): Promise<void> {
    if (this.closed) return;
    const closes = this.pendingCloses.splice(0);
    for (const sel of closes) {
      await this.publish({ t: 'close', from: this.instanceId, sel }).catch((err: unknown) => {
        this.o.onError(err, 'bus publish failed');
        this.pendingCloses.push(sel);
      });
    }
    if (this.missed.size === 0) return;
    const devices = [...this.missed];
    this.missed.clear();
    await this.publish({ t: 'close', from: this.instanceId, sel: { devices } }).catch((err: unknown) => {
      this.o.onError(err, 'bus publish failed');
      for (const id of devices) this.missed.add(id);
    });
  }

  async closeStreams(sel: CloseSelector): Promise<void> {
    this.local.closeWhere(sel);
    try {
      await this.publish({ t: 'close', from: this.instanceId, sel });
    } catch (err) {
      // The revocation is committed; the other instances close those streams as soon as the
      // connection is back. Until then it must not look like success, so the request fails.
      if (this.pendingCloses.length < MAX_PENDING_CLOSES) this.pendingCloses.push(sel);
      throw err;
    }
  }

  async onlineDevices(deviceIds: string[]): Promise<Set<string>> {
    if (deviceIds.length === 0) return new Set();
    let values: (string | null)[];
    try {
      values = await this.o.pub.mget(deviceIds.map((id) => this.presenceKey(id)));
    } catch (err) {
      // Presence unknown: only this instance's own streams count as online, every other device
      // as offline, so it gets its push. A notification too many (it carries no text) is
      // better than one missed (docs/SECURITY.md).
      this.o.onError(err, 'presence lookup failed; treating remote devices as offline');
      return new Set(deviceIds.filter((id) => this.local.has(id)));
    }
    const online = new Set<string>();
    deviceIds.forEach((id, i) => {
      if (values[i] !== null || this.local.has(id)) online.add(id);
    });
    return online;
  }

  /** Re-arms the TTL of every local stream's presence key. */
  private async refreshPresence(): Promise<void> {
    const conns = this.local.connections();
    if (conns.length === 0) return;
    const batch = this.o.pub.pipeline();
    for (const c of conns) {
      const token = this.tokens.get(c);
      if (token !== undefined) batch.eval(REFRESH_SCRIPT, 1, this.presenceKey(c.deviceId), token, this.ttl);
    }
    await batch.exec().catch((err: unknown) => this.o.onError(err, 'presence refresh failed'));
  }

  /**
   * What a crash leaves behind: presence keys that nobody refreshes or releases, lapsing only by
   * their TTL. Tests call it to model a killed instance without killing the test process.
   */
  abandon(): void {
    this.closed = true;
    clearInterval(this.refresher);
    this.o.pub.disconnect();
    this.o.sub.disconnect();
  }

  /** Publishes what this round delivered, releases the presence of any stream still open here, then disconnects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.publishDeliveries();
    this.closed = true;
    clearInterval(this.refresher);
    const batch = this.o.pub.pipeline();
    for (const c of this.local.connections()) {
      const token = this.tokens.get(c);
      if (token !== undefined) batch.eval(RELEASE_SCRIPT, 1, this.presenceKey(c.deviceId), token);
    }
    await batch.exec().catch(() => undefined);
    // quit() fails on a connection that is down (no offline queue); disconnect() then stops its
    // reconnect timer, which would otherwise keep the process alive after a Redis outage.
    await this.o.sub.quit().catch(() => this.o.sub.disconnect());
    await this.o.pub.quit().catch(() => this.o.pub.disconnect());
  }
}
