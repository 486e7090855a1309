/**
 * An incremental HTTP/1.1 response parser over raw bytes, for the load generator's sockets
 * (raw-http.ts's senders and sse.ts's event streams). It reads the status line and the few
 * headers that frame the body and say whether the connection stays open, hands the body on in
 * pieces, and never builds a string of a body.
 */
const LF = 0x0a;
const CR = 0x0d;
/** A response head longer than this is not from one of our servers. */
const MAX_HEAD_BYTES = 64 * 1024;

/**
 * One read buffer for every socket of the generator (`net` `onread`): reads are handled one at a
 * time and synchronously, and whatever is kept past a read is copied out, so no socket needs a
 * buffer of its own and no read allocates one.
 */
export const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

const enum St {
  Head,
  Length,
  ChunkSize,
  ChunkExt,
  ChunkData,
  ChunkDataEnd,
  Trailer,
  UntilClose,
  Done,
}

/** What the head of a response says about it. */
export interface Head {
  status: number;
  /** false when the server closes the connection after this response (or HTTP/1.0 without keep-alive). */
  keepAlive: boolean;
  /** The server's keep-alive timeout from `Keep-Alive: timeout=N`, in ms, or null. */
  keepAliveMs: number | null;
}

export interface ParserEvents {
  head(h: Head): void;
  /** A piece of the (de-chunked) body: bytes [start, end) of `buf`, valid only during the call. */
  body(buf: Buffer, start: number, end: number): void;
  /** The response ended (by its length, its last chunk, or the connection closing for an unframed body). */
  complete(): void;
}

function headerValue(lower: string, name: string): string | null {
  const at = lower.indexOf(`\r\n${name}:`);
  if (at < 0) return null;
  const from = at + name.length + 3;
  const to = lower.indexOf('\r\n', from);
  return lower.slice(from, to < 0 ? lower.length : to).trim();
}

/**
 * An incremental HTTP/1.1 response parser over the bytes of one connection. Feed it whatever the
 * socket gives: a response may come in several pieces, and several responses may come in one.
 * Throws on a malformed response; the connection is then unusable.
 */
export class ResponseParser {
  private st = St.Head;
  /** The start of a head that was split across reads. */
  private partial: Buffer | null = null;
  private remaining = 0;
  private chunkSize = 0;
  private chunkDigits = 0;
  private trailerLineLen = 0;
  /** The current response is the connection's last (`Connection: close`). */
  private closeAfter = false;

  constructor(private readonly on: ParserEvents) {}

  /** True while a response has begun and not ended (the connection closing now would cut it). */
  get midResponse(): boolean {
    return this.partial !== null || (this.st !== St.Head && this.st !== St.Done);
  }

  feed(chunk: Buffer): void {
    let b = chunk;
    let i = 0;
    let n = b.length;
    while (i < n) {
      switch (this.st) {
        case St.Head: {
          let from = i;
          if (this.partial) {
            from = Math.max(0, this.partial.length - 3);
            b = Buffer.concat([this.partial, i === 0 ? b : b.subarray(i)]);
            this.partial = null;
            i = 0;
            n = b.length;
          }
          const end = b.indexOf('\r\n\r\n', from, 'latin1');
          if (end < 0) {
            if (n - i > MAX_HEAD_BYTES) throw new Error('response head too long');
            this.partial = Buffer.from(b.subarray(i));
            return;
          }
          this.head(b, i, end);
          i = end + 4;
          break;
        }
        case St.Length:
        case St.ChunkData: {
          const take = Math.min(this.remaining, n - i);
          this.on.body(b, i, i + take);
          i += take;
          this.remaining -= take;
          if (this.remaining === 0) {
            if (this.st === St.Length) this.complete();
            else this.st = St.ChunkDataEnd;
          }
          break;
        }
        case St.ChunkDataEnd:
          // The CRLF after a chunk's data.
          if (b[i++] === LF) this.st = St.ChunkSize;
          break;
        case St.ChunkSize: {
          const c = b[i++]!;
          if (c === LF) this.chunkSizeLine();
          else if (c === CR) continue;
          else if (c === 0x3b /* ; */) this.st = St.ChunkExt;
          else {
            const d = c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1;
            if (d < 0 || ++this.chunkDigits > 8) throw new Error('bad chunk size');
            this.chunkSize = this.chunkSize * 16 + d;
          }
          break;
        }
        case St.ChunkExt:
          if (b[i++] === LF) this.chunkSizeLine();
          break;
        case St.Trailer: {
          const c = b[i++]!;
          if (c === LF) {
            if (this.trailerLineLen === 0) this.complete();
            this.trailerLineLen = 0;
          } else if (c !== CR) this.trailerLineLen++;
          break;
        }
        case St.UntilClose:
          this.on.body(b, i, n);
          i = n;
          break;
        case St.Done:
          // Bytes after a response that closes the connection: ignored.
          return;
      }
    }
  }

  /** The connection ended: completes a body that runs until the close. */
  end(): void {
    if (this.st === St.UntilClose) this.complete();
  }

  private head(b: Buffer, start: number, end: number): void {
    // The head is short; one latin1 string of it, lower-cased, is cheaper than a header object.
    const text = b.toString('latin1', start, end);
    if (!text.startsWith('HTTP/1.')) throw new Error(`not an HTTP/1 response: ${JSON.stringify(text.slice(0, 40))}`);
    const status = Number(text.slice(9, 12));
    if (!(status >= 100 && status <= 999)) throw new Error(`bad status line: ${JSON.stringify(text.slice(0, 40))}`);
    if (status < 200) return; // an interim answer (100 Continue): the real one follows
    const lower = text.toLowerCase();
    const connection = headerValue(lower, 'connection');
    const keepAlive = connection === null ? text[7] === '1' : !connection.includes('close') && (text[7] === '1' || connection.includes('keep-alive'));
    const ka = headerValue(lower, 'keep-alive');
    const t = ka === null ? null : /timeout=(\d+)/.exec(ka);
    const h: Head = { status, keepAlive, keepAliveMs: t ? Number(t[1]) * 1000 : null };
    const te = headerValue(lower, 'transfer-encoding');
    const cl = headerValue(lower, 'content-length');
    if (status === 204 || status === 304) {
      this.remaining = 0;
      this.st = St.Length;
    } else if (te !== null && te.includes('chunked')) this.st = St.ChunkSize;
    else if (cl !== null) {
      this.remaining = Number(cl);
      if (!Number.isSafeInteger(this.remaining) || this.remaining < 0) throw new Error(`bad content-length ${cl}`);
      this.st = St.Length;
    } else {
      h.keepAlive = false;
      this.st = St.UntilClose;
    }
    if (this.st === St.ChunkSize) {
      this.chunkSize = 0;
      this.chunkDigits = 0;
    }
    this.on.head(h);
    if (!h.keepAlive && this.st !== St.UntilClose) this.closeAfter = true;
    if (this.st === St.Length && this.remaining === 0) this.complete();
  }

  private chunkSizeLine(): void {
    if (this.chunkDigits === 0) throw new Error('bad chunk size');
    this.remaining = this.chunkSize;
    this.chunkSize = 0;
    this.chunkDigits = 0;
    if (this.remaining === 0) {
      this.trailerLineLen = 0;
      this.st = St.Trailer;
    } else this.st = St.ChunkData;
  }

  private complete(): void {
    this.st = this.closeAfter ? St.Done : St.Head;
    this.closeAfter = false;
    this.on.complete();
  }
}
