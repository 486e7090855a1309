/**
 * EventStream: the device's event stream over fetch (so it can send cookies from Node and read
 * error bodies), with the connection state the UI shows, acknowledgement after the app has stored
 * a message, batched acks, and reconnection with exponential backoff and jitter.
 *
 * Delivery contract: onMsg is called once per envelope, in stream order, one at a time. The id is
 * acknowledged only after the promise onMsg returned resolves; if it rejects, the id is not
 * acknowledged and the service replays the envelope on the next connection. Acks go out in batches
 * of at most 500 ids: when the replay ends (`ready`), after `ackDelayMs` of quiet, or at 500.
 */
import { LIMITS, type Envelope, type EventPayloads, type Room } from '@svc/protocol';
import type { ApiClient } from './api.js';
import { SdkError } from './errors.js';
import { SseParser, type SseMessage } from './sse.js';

/**
 * connecting: opening the stream; replaying: open, queued envelopes arriving; live: replay done,
 * new envelopes arrive as sent; offline: disconnected, a retry is scheduled; closed: stopped for
 * good (close() was called, or the session or device is gone — see `closeReason`).
 */
export type ConnectionState = 'connecting' | 'replaying' | 'live' | 'offline' | 'closed';

/** Why the stream stopped for good. */
export type CloseReason = 'closed' | 'unauthenticated' | 'unknown_device' | 'invalid_device';

export interface StateInfo {
  /** With `offline`: ms until the next attempt, and the error that caused it. */
  retryInMs?: number;
  error?: unknown;
  /** With `closed`. */
  reason?: CloseReason;
}

export interface EventStreamOptions {
  /** The device whose queue this stream drains. Defaults to the ApiClient's device. */
  device?: string;
  /** Store the envelope (decrypt it first if you like); resolve when it is safe to acknowledge. */
  onMsg: (envelope: Envelope) => Promise<void> | void;
  /** Replay is complete. A good moment to re-read GET /api/rooms (room events are not queued). */
  onReady?: () => Promise<void> | void;
  onRoom?: (room: Room) => Promise<void> | void;
  onRoomLeft?: (ev: { id: string }) => Promise<void> | void;
  onState?: (state: ConnectionState, info: StateInfo) => void;
  /** A handler threw or an ack failed; the stream carries on. */
  onError?: (error: unknown) => void;
  /** Debounce of acks during live traffic. Default 250 ms. */
  ackDelayMs?: number;
  /** Backoff: first delay and ceiling, ms. Defaults 500 and 30000. */
  backoffMs?: { initial: number; max: number };
  /** No bytes at all (not even the 20 s ping) for this long means the connection is dead. Default 45000. */
  idleTimeoutMs?: number;
}

export class EventStream {
  private st: ConnectionState = 'offline';
  private reason: CloseReason | undefined;
  private abort: AbortController | null = null;
  private attempt = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private ackTimer: ReturnType<typeof setTimeout> | null = null;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;
  /** Handled (stored) but not yet acknowledged ids, in order. */
  private pendingAcks = new Set<string>();
  private inFlightAcks = new Set<string>();
  private chain: Promise<void> = Promise.resolve();
  private readonly device: string | undefined;
  private readonly ackDelay: number;
  private readonly backoff: { initial: number; max: number };
  private readonly idleTimeout: number;
  private stopped = false;
  private running: Promise<void> | null = null;

  constructor(
    private readonly api: ApiClient,
    private readonly o: EventStreamOptions,
  ) {
    this.device = o.device ?? api.device;
    this.ackDelay = o.ackDelayMs ?? 250;
    this.backoff = o.backoffMs ?? { initial: 500, max: 30_000 };
    this.idleTimeout = o.idleTimeoutMs ?? 45_000;
  }

  get state(): ConnectionState {
    return this.st;
  }

  get closeReason(): CloseReason | undefined {
    return this.reason;
  }

  /** Ids stored by the app but not yet acknowledged to the service. */
  get unacked(): number {
    return this.pendingAcks.size + this.inFlightAcks.size;
  }

  /** Starts connecting (idempotent). */
  start(): this {
    if (!this.running && !this.stopped) this.running = this.connect();
    return this;
  }

  /**
   * While `offline` (a retry is scheduled): connects now instead of waiting out the backoff, with
   * the backoff started over. For when the app learns the network is back (the browser's `online`
   * event). Does nothing in any other state.
   */
  reconnectNow(): void {
    if (this.stopped || this.st !== 'offline' || !this.retryTimer) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.attempt = 0;
    this.running = this.connect();
  }

  /** Stops for good: aborts the connection, flushes pending acks (best effort), reports `closed`. */
  async close(): Promise<void> {
    if (this.stopped) return;
    this.finish('closed');
    await this.chain.catch(() => undefined);
    await this.flushAcks();
  }

  /** Sends the pending acks now (one request per 500 ids). */
  async flushAcks(): Promise<void> {
    if (this.ackTimer) clearTimeout(this.ackTimer);
    this.ackTimer = null;
    while (this.pendingAcks.size > 0) {
      const ids = [...this.pendingAcks].slice(0, LIMITS.ackBatch);
      for (const id of ids) {
        this.pendingAcks.delete(id);
        this.inFlightAcks.add(id);
      }
      try {
        await this.api.ack(ids);
      } catch (e) {
        // Keep them for the next flush; the service keeps them queued meanwhile.
        for (const id of ids) this.pendingAcks.add(id);
        this.o.onError?.(e);
        if (e instanceof SdkError && (e.code === 'unauthenticated' || e.code === 'unknown_device')) this.finish(e.code);
        return;
      } finally {
        for (const id of ids) this.inFlightAcks.delete(id);
      }
    }
  }

  private setState(s: ConnectionState, info: StateInfo = {}): void {
    this.st = s;
    this.o.onState?.(s, info);
  }

  private finish(reason: CloseReason): void {
    if (this.stopped) return;
    this.stopped = true;
    this.reason = reason;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.abort?.abort();
    this.setState('closed', { reason });
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    this.setState('connecting');
    const abort = new AbortController();
    this.abort = abort;
    let error: unknown;
    try {
      const res = await this.api.openEvents(this.device, abort.signal);
      if (!res.body) throw new SdkError('bad_response', { status: res.status });
      this.setState('replaying');
      await this.read(res.body, abort);
    } catch (e) {
      error = e;
      if (e instanceof SdkError) {
        if (e.code === 'unauthenticated') return this.finish('unauthenticated');
        if (e.code === 'unknown_device') return this.finish('unknown_device');
        if (e.code === 'invalid') return this.finish('invalid_device');
      }
    } finally {
      if (this.idleTimer) clearTimeout(this.idleTimer);
    }
    if (this.stopped) return;
    // Everything handled so far is acknowledged before reconnecting, so the replay holds only what is new.
    await this.chain.catch(() => undefined);
    void this.flushAcks();
    const base = Math.min(this.backoff.max, this.backoff.initial * 2 ** this.attempt);
    const delay = Math.round(base / 2 + Math.random() * (base / 2));
    this.attempt++;
    this.setState('offline', { retryInMs: delay, ...(error !== undefined ? { error } : {}) });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.running = this.connect();
    }, delay);
  }

  private armIdle(abort: AbortController): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => abort.abort(), this.idleTimeout);
  }

  private async read(body: ReadableStream<Uint8Array>, abort: AbortController): Promise<void> {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    const parser = new SseParser((m) => this.enqueue(m));
    this.armIdle(abort);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        this.armIdle(abort);
        parser.push(decoder.decode(value, { stream: true }));
      }
    } finally {
      reader.releaseLock();
    }
  }

  /** Handlers run one at a time in stream order, so `ready` comes after the replayed messages are stored. */
  private enqueue(m: SseMessage): void {
    this.chain = this.chain.then(() => this.handle(m)).catch((e: unknown) => this.o.onError?.(e));
  }

  private async handle(m: SseMessage): Promise<void> {
    if (this.stopped) return;
    let data: unknown;
    try {
      data = JSON.parse(m.data);
    } catch (e) {
      this.o.onError?.(new SdkError('bad_response', { cause: e }));
      return;
    }
    switch (m.event) {
      case 'msg': {
        const env = data as EventPayloads['msg'];
        if (typeof env?.id !== 'string') return;
        // Stored before (replayed because the ack was still in flight): only acknowledge again.
        if (!this.pendingAcks.has(env.id) && !this.inFlightAcks.has(env.id)) await this.o.onMsg(env);
        this.pendingAcks.add(env.id);
        if (this.pendingAcks.size >= LIMITS.ackBatch) void this.flushAcks();
        else if (this.st === 'live') this.scheduleAck();
        return;
      }
      case 'ready':
        this.attempt = 0;
        await this.flushAcks();
        if (this.st === 'replaying') this.setState('live');
        await this.o.onReady?.();
        return;
      case 'room':
        await this.o.onRoom?.(data as EventPayloads['room']);
        return;
      case 'room_left':
        await this.o.onRoomLeft?.(data as EventPayloads['room_left']);
        return;
      default:
        return;
    }
  }

  private scheduleAck(): void {
    if (this.ackTimer) clearTimeout(this.ackTimer);
    this.ackTimer = setTimeout(() => {
      this.ackTimer = null;
      void this.flushAcks();
    }, this.ackDelay);
  }
}
