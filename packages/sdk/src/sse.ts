/**
 * An incremental server-sent events parser (the WHATWG event-stream format): `event:`, `data:`
 * (several lines joined by "\n"), `id:`, comment lines starting with ":" and any of CRLF, LF, CR
 * as line ends. Feed it decoded text chunks; it calls back once per complete event.
 */
export interface SseMessage {
  event: string;
  data: string;
  id: string | undefined;
}

export class SseParser {
  private buf = '';
  private event = '';
  private data: string[] = [];
  private id: string | undefined;
  private sawCr = false;

  constructor(
    private readonly onEvent: (m: SseMessage) => void,
    private readonly onComment: (text: string) => void = () => undefined,
  ) {}

  push(chunk: string): void {
    let text = chunk;
    // A CR at the end of the previous chunk already ended a line; skip the LF of its CRLF.
    if (this.sawCr && text.startsWith('\n')) text = text.slice(1);
    this.sawCr = false;
    this.buf += text;
    let start = 0;
    for (let i = 0; i < this.buf.length; i++) {
      const c = this.buf.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      this.line(this.buf.slice(start, i));
      if (c === 13) {
        if (i + 1 < this.buf.length) {
          if (this.buf.charCodeAt(i + 1) === 10) i++;
        } else this.sawCr = true;
      }
      start = i + 1;
    }
    this.buf = this.buf.slice(start);
  }

  private line(line: string): void {
    if (line === '') {
      this.dispatch();
      return;
    }
    if (line.startsWith(':')) {
      this.onComment(line.slice(1).replace(/^ /, ''));
      return;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
    else if (field === 'id' && !value.includes('\0')) this.id = value;
    // "retry" and unknown fields are ignored: reconnection timing is ours (backoff with jitter).
  }

  private dispatch(): void {
    if (this.data.length > 0) this.onEvent({ event: this.event || 'message', data: this.data.join('\n'), id: this.id });
    this.event = '';
    this.data = [];
    this.id = undefined;
  }
}
