/**
 * The streams open on this process, one per device. A stream passes events to its sink, which
 * makes their bytes (the HTTP layer's `http/sse.ts`); a stream that is still replaying its queue
 * holds live events until the replay is done, and a stream whose reader stops reading is dropped
 * once its write buffer passes a bound, never waited for.
 */
import type { CloseSelector, Delivery, StreamEvent } from './events.js';

/** What a stream writes to: the HTTP response, seen through the little it needs. */
export interface StreamSink {
  /**
   * Writes one event. The same event object may be sent to many sinks (one delivery to all its
   * target devices), so a sink may keep what it made of it. false when the buffer is full.
   */
  send(ev: StreamEvent): boolean;
  /** The keep-alive comment, so that proxies and clients see an idle stream is still open (docs/API.md). */
  ping(): void;
  /** Bytes accepted but not yet flushed to the socket. */
  readonly buffered: number;
  /** Resolves when the buffer has drained or the stream has closed. */
  drained(): Promise<void>;
  end(): void;
  /**
   * Cuts the connection at once, dropping what is buffered: for a reader that stopped reading,
   * whose socket would otherwise stay open (and its buffer held) for as long as it likes.
   */
  destroy?(): void;
  /** true once the client has gone (the socket closed): nothing written reaches anyone. */
  readonly gone?: boolean;
}

export const MAX_STREAM_BUFFER = 1024 * 1024;

export class StreamConn {
  replaying = true;
  closed = false;
  private held: StreamEvent[] = [];
  /** Bytes of data in `held`: live events wait there while the replay runs, within the same bound. */
  private heldBytes = 0;
  /**
   * Envelope ids the replay sent, kept until the next ping: a replay can read an envelope whose
   * send is committed but not yet answered (its sync still running), and that send then
   * delivers it live too, after the replay ended. The second copy is dropped here.
   */
  private replayedRecently: Set<string> | null = null;

  constructor(
    readonly deviceId: string,
    readonly nick: string,
    readonly sessionId: string,
    private readonly sink: StreamSink,
  ) {}

  /** The client went away (its socket closed), whether or not the close has been handled yet. */
  get gone(): boolean {
    return this.sink.gone === true;
  }

  /** Sends a live event, or holds it while the replay runs. Returns false when the stream had to be dropped. */
  push(ev: StreamEvent): boolean {
    if (this.closed) return false;
    if (this.replaying) {
      this.held.push(ev);
      this.heldBytes += ev.data.length;
      // A reader stuck in the replay (not reading) cannot make the live events pile up forever.
      if (this.heldBytes > MAX_STREAM_BUFFER) {
        this.drop();
        return false;
      }
      return true;
    }
    if (ev.event === 'msg' && this.replayedRecently?.has(ev.id)) return true;
    this.sink.send(ev);
    if (this.sink.buffered > MAX_STREAM_BUFFER) {
      this.drop();
      return false;
    }
    return true;
  }

  /** Drops a stream whose reader does not keep up; what it missed stays queued for its next replay. */
  drop(): void {
    if (this.closed) return;
    this.closed = true;
    this.held = [];
    this.heldBytes = 0;
    if (this.sink.destroy) this.sink.destroy();
    else this.sink.end();
  }

  /** Sends during the replay, waiting for the reader when the buffer is full. */
  async writeReplay(ev: StreamEvent): Promise<void> {
    if (!this.sink.send(ev)) await this.sink.drained();
  }

  /** Ends the replay: held live events not already replayed go out, then `ready`. */
  finishReplay(replayed: Set<string>, ready: StreamEvent): void {
    for (const ev of this.held) {
      if (ev.event === 'msg' && replayed.has(ev.id)) continue;
      this.sink.send(ev);
    }
    this.held = [];
    this.heldBytes = 0;
    this.sink.send(ready);
    this.replaying = false;
    this.replayedRecently = replayed.size > 0 ? replayed : null;
  }

  ping(): void {
    this.replayedRecently = null;
    if (!this.closed) this.sink.ping();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.held = [];
    this.heldBytes = 0;
    this.sink.end();
  }
}

export class LocalStreams {
  private readonly byDevice = new Map<string, StreamConn>();
  private pinger: NodeJS.Timeout | null = null;

  constructor(pingIntervalMs: number) {
    // One timer for every stream rather than one each: cheap at ten thousand streams.
    this.pinger = setInterval(() => {
      for (const c of this.byDevice.values()) c.ping();
    }, pingIntervalMs);
    this.pinger.unref();
  }

  get size(): number {
    return this.byDevice.size;
  }

  /** Registers a stream; an older stream of the same device is closed (the newer one replays). */
  add(conn: StreamConn): void {
    const old = this.byDevice.get(conn.deviceId);
    this.byDevice.set(conn.deviceId, conn);
    old?.close();
  }

  remove(conn: StreamConn): void {
    if (this.byDevice.get(conn.deviceId) === conn) this.byDevice.delete(conn.deviceId);
  }

  connections(): StreamConn[] {
    return [...this.byDevice.values()];
  }

  has(deviceId: string): boolean {
    return this.byDevice.has(deviceId);
  }

  /** Each delivery goes to its targets' streams as the one same object, so its bytes are made once for all of them. */
  deliver(deliveries: Delivery[]): void {
    for (const d of deliveries) {
      for (const deviceId of d.devices) {
        const conn = this.byDevice.get(deviceId);
        if (conn && !conn.push(d)) this.remove(conn);
      }
    }
  }

  closeWhere(sel: CloseSelector): void {
    const sessions = new Set(sel.sessions ?? []);
    const devices = new Set(sel.devices ?? []);
    const nicks = new Set(sel.nicks ?? []);
    for (const conn of [...this.byDevice.values()]) {
      if (sessions.has(conn.sessionId) || devices.has(conn.deviceId) || nicks.has(conn.nick)) {
        this.remove(conn);
        conn.close();
      }
    }
  }

  closeAll(): void {
    for (const conn of [...this.byDevice.values()]) conn.close();
    this.byDevice.clear();
    if (this.pinger) clearInterval(this.pinger);
    this.pinger = null;
  }
}
