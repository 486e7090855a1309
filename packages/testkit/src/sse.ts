/**
 * The tests' event-stream reader: parses a `text/event-stream` body (docs/API.md) as it
 * arrives into events and comments (the pings), and lets a test wait for what it expects.
 */

export interface SseEvent {
  /** An EventName, or anything else a stream might carry. */
  event: string;
  id?: string;
  data: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export class SseReader {
  events: SseEvent[] = [];
  comments: string[] = [];
  ended = false;
  private waiters: (() => void)[] = [];

  /** Reads `body` to its end, or until it is closed or reset; `ended` is set then. */
  async read(body: AsyncIterable<Uint8Array>): Promise<void> {
    const dec = new TextDecoder();
    let buf = '';
    try {
      for await (const value of body) {
        buf += dec.decode(value, { stream: true });
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          this.parse(buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
        this.wake();
      }
    } catch {
      // closed or reset
    }
    this.ended = true;
    this.wake();
  }

  private parse(block: string): void {
    let event = 'message';
    let id: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) {
        this.comments.push(line);
        continue;
      }
      const c = line.indexOf(':');
      const field = c < 0 ? line : line.slice(0, c);
      const value = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'id') id = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length === 0 && id === undefined && event === 'message') return;
    const text = data.join('\n');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    this.events.push({ event, ...(id !== undefined ? { id } : {}), data: text, json });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Waits until `pred` holds for the events so far (or the stream ends, or the timeout passes). */
  async until(pred: (events: SseEvent[]) => boolean, timeoutMs = 3000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (!pred(this.events)) {
      if (this.ended) return pred(this.events);
      const left = deadline - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    return true;
  }

  named(name: string): SseEvent[] {
    return this.events.filter((e) => e.event === name);
  }
}
