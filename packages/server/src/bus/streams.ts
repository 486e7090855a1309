/**
 * The streams open on this process, one per device. Frames go out as SSE text; a stream that is
 * still replaying its queue buffers live frames until the replay is done, and a stream whose
 * reader stops reading is dropped once its write buffer passes a bound, never waited for.
 */
import { PING_FRAME, type EventName } from '@svc/protocol';
import type { CloseSelector, Delivery } from './types.js';

/** What a stream writes to: the HTTP response, seen through the little it needs. */
export interface StreamSink {
  write(chunk: string): boolean;
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

/** One SSE frame. Event names are fixed and ids are validated ULIDs; a line break in either would forge fields. */
export function sseFrame(event: EventName, data: string, id?: string): string {
  if (/[\r\n]/.test(event) || (id !== undefined && /[\r\n]/.test(id))) throw new Error('line break in SSE field');
  return id === undefined ? `event: ${event}\ndata: ${data}\n\n` : `event: ${event}\nid: ${id}\ndata: ${data}\n\n`;
}

export class StreamConn {
  replaying = true;
  closed = false;
  private held: { frame: string; msgId: string | undefined }[] = [];
  /** Bytes of `held`: live frames wait there while the replay runs, within the same bound. */
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

  /** Writes a live frame, or holds it while the replay runs. Returns false when the stream had to be dropped. */
  push(frame: string, msgId?: string): boolean {
    if (this.closed) return false;
    if (this.replaying) {
      this.held.push({ frame, msgId });
      this.heldBytes += frame.length;
      // A reader stuck in the replay (not reading) cannot make the live frames pile up forever.
      if (this.heldBytes > MAX_STREAM_BUFFER) {
        this.drop();
        return false;
      }
      return true;
    }
    if (msgId !== undefined && this.replayedRecently?.has(msgId)) return true;
    this.sink.write(frame);
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

  /** Writes during the replay, waiting for the reader when the buffer is full. */
  async writeReplay(frame: string): Promise<void> {
    if (!this.sink.write(frame)) await this.sink.drained();
  }

  /** Ends the replay: held live frames not already replayed go out, then `ready`. */
  finishReplay(replayed: Set<string>, readyFrame: string): void {
    for (const h of this.held) {
      if (h.msgId !== undefined && replayed.has(h.msgId)) continue;
      this.sink.write(h.frame);
    }
    this.held = [];
    this.heldBytes = 0;
    this.sink.write(readyFrame);
    this.replaying = false;
    this.replayedRecently = replayed.size > 0 ? replayed : null;
  }

  ping(): void {
    this.replayedRecently = null;
    if (!this.closed) this.sink.write(PING_FRAME);
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

  deliver(deliveries: Delivery[]): void {
    for (const d of deliveries) {
      let frame: string | null = null;
      for (const deviceId of d.devices) {
        const conn = this.byDevice.get(deviceId);
        if (!conn) continue;
        frame ??= sseFrame(d.event, d.data, d.id);
        if (!conn.push(frame, d.event === 'msg' ? d.id : undefined)) this.remove(conn);
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
