/**
 * Every envelope of a load test, counted at its receivers. Senders record what they tried and what
 * was answered 202; readers (one per device) keep a stream open, acknowledge what arrives, open it
 * again after every outage and record each arrival. The tally then says:
 *   - lost: a delivery answered 202 (envelope × target device) that never arrived;
 *   - duplicated: an envelope that came again on a stream opened after its acknowledgement was
 *     answered 204, or twice on one stream;
 *   - misrouted: an envelope that arrived at a device it was not addressed to (or that nobody sent);
 *   - altered: an envelope whose sender or ciphertext differ from what was sent;
 *   - resumed: streams whose replay started at the device's cursor, its queue of unacknowledged
 *     envelopes: nothing acknowledged before the open, and everything accepted before it and not
 *     acknowledged.
 * A send or an acknowledgement that got no answer (the service died) or 500 `internal` (its
 * database went away) has an unknown outcome: a send is retried with the same id, as the SDK's
 * outbox does, and an acknowledgement's ids may or may not still be queued.
 */
import { Stream, type Client, type SseEvent } from '@svc/testkit/harness';

/** What a sender tried: where it goes and what it holds, to recognise it on arrival. */
export interface Sent {
  id: string;
  from: string;
  targets: string[];
  ct: string;
}

export class Ledger {
  /** Every envelope a sender tried, by id, whatever the answer. */
  readonly tried = new Map<string, Sent>();
  /** Ids answered 202, in the order of the answers. */
  readonly accepted: string[] = [];
  private readonly acceptedSet = new Set<string>();
  /** Per target device, the ids answered 202 for it, in the order of the answers. */
  private readonly byDevice = new Map<string, string[]>();

  try(sent: Sent): void {
    this.tried.set(sent.id, sent);
  }

  accept(id: string): void {
    if (this.acceptedSet.has(id)) return;
    const sent = this.tried.get(id);
    if (!sent) throw new Error(`accepted an envelope never tried: ${id}`);
    this.acceptedSet.add(id);
    this.accepted.push(id);
    for (const d of sent.targets) {
      let list = this.byDevice.get(d);
      if (!list) this.byDevice.set(d, (list = []));
      list.push(id);
    }
  }

  /** The ids answered 202 for `device` so far: a prefix of what `acceptedFor` answers later. */
  acceptedFor(device: string): readonly string[] {
    return this.byDevice.get(device) ?? [];
  }

  /** Deliveries answered 202 that have not arrived, as `id→device`. */
  missing(readers: readonly Reader[]): string[] {
    const out: string[] = [];
    for (const r of readers) for (const id of this.acceptedFor(r.device)) if (!r.received.has(id)) out.push(`${id}→${r.device}`);
    return out;
  }
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A send whose answer never came, or came as 500 `internal`: it may or may not have been stored. */
function unknownOutcome(r: { status: number; json: unknown } | null): boolean {
  return r === null || (r.status === 500 && (r.json as { error?: unknown } | undefined)?.error === 'internal');
}

export interface Outgoing {
  body: { id: string; ct: string } & Record<string, unknown>;
  targets: string[];
}

/** Sends back to back until stopped; a send with an unknown outcome is retried, oldest first, before anything new. */
export class Sender {
  /** Tried, outcome unknown: retried with the same id until answered 202. */
  private readonly pending: Outgoing[] = [];
  /** Answers that are neither 202 nor an unknown outcome: each fails the test. */
  readonly errors: string[] = [];
  /** Sends that got no answer or a 500 `internal`, each retried later. */
  failed = 0;
  /** Sends answered 202. */
  accepted = 0;
  /** The last answer that was not a 202, for the message of a failing test. */
  lastFailure = '';
  stopped = false;
  private loop: Promise<void> | null = null;

  constructor(
    readonly c: Client,
    readonly device: string,
    readonly ledger: Ledger,
    readonly make: () => Outgoing,
  ) {}

  get unsettled(): number {
    return this.pending.length;
  }

  private async sendOne(m: Outgoing): Promise<boolean> {
    this.ledger.try({ id: m.body.id, from: this.c.nick, targets: m.targets, ct: m.body.ct });
    const started = performance.now();
    const r = await this.c.post('/api/messages', m.body, { device: this.device }).catch(() => null);
    if (r?.status === 202) {
      this.ledger.accept(m.body.id);
      this.accepted++;
      return true;
    }
    this.lastFailure = r === null ? 'no answer' : `${r.status} ${r.text}`;
    if (unknownOutcome(r)) this.failed++;
    else
      this.errors.push(
        `send ${m.body.id}: ${r!.status} ${r!.text} after ${Math.round(performance.now() - started)} ms (connection: ${r!.headers.get('connection')})`,
      );
    return false;
  }

  start(): void {
    this.stopped = false;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const retry = this.pending.length > 0;
      const m = retry ? this.pending[0]! : this.make();
      if (await this.sendOne(m)) {
        if (retry) this.pending.shift();
      } else {
        if (!retry) this.pending.push(m);
        await pause(50);
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    this.loop = null;
  }

  /** Retries every send with an unknown outcome until it is answered 202; false if the deadline passes first. */
  async settle(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.pending.length > 0) {
      if (Date.now() > deadline) return false;
      if (await this.sendOne(this.pending[0]!)) this.pending.shift();
      else await pause(100);
    }
    return true;
  }
}

/** One device: keeps a stream open, acknowledges what it gets, and opens the stream again whenever it ends. */
export class Reader {
  readonly received = new Set<string>();
  /** Ids whose acknowledgement was answered 204. */
  readonly acked = new Set<string>();
  /** Ids whose acknowledgement got no answer or a 500: the service may or may not have applied it. */
  readonly ackUnknown = new Set<string>();
  readonly duplicated = new Set<string>();
  readonly misrouted = new Set<string>();
  readonly altered = new Set<string>();
  /** Streams that opened (200), those refused or cut before an answer, and those whose replay reached `ready`. */
  opens = 0;
  refused = 0;
  replays = 0;
  /** Replays that started exactly at the cursor. */
  resumed = 0;
  /** Accepted, unacknowledged envelopes a replay left out, as `id@open`. */
  readonly resumeGaps: string[] = [];
  readonly errors: string[] = [];
  /** What the reader is doing, for the message of a failing test. */
  get state(): string {
    const s = this.stream;
    return `${this.device} on ${this.c.server.url}: ${this.opens} opens, ${this.refused} refused, ${this.replays} replays, stream ${s === null ? 'none' : s.ended ? 'ended' : `open with ${s.events.length} events${s.events.some((e) => e.event === 'ready') ? ', ready' : ''}`}`;
  }
  private stream: Stream | null = null;
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(
    readonly c: Client,
    readonly device: string,
    readonly ledger: Ledger,
  ) {}

  start(): void {
    this.stopped = false;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      // The cursor as this client knows it when it asks: acknowledged (204), acknowledgement
      // unknown, and the envelopes answered 202 for this device so far.
      const ackedAtOpen = new Set(this.acked);
      const unknownAtOpen = new Set(this.ackUnknown);
      const acceptedAtOpen = this.ledger.acceptedFor(this.device).length;
      const s = await Stream.open(this.c, this.device).catch(() => null);
      if (!s || s.status !== 200) {
        if (s && s.status !== 500) this.errors.push(`stream open: ${s.status}`);
        this.refused++;
        await pause(100);
        continue;
      }
      this.stream = s;
      this.opens++;
      const onStream = new Set<string>();
      const replay = new Set<string>();
      let ready = false;
      let seen = 0;
      while (!this.stopped && !s.ended) {
        await s.until((ev) => ev.length > seen, 100);
        const batch = s.events.slice(seen);
        seen += batch.length;
        const ids: string[] = [];
        for (const e of batch) {
          if (e.event === 'ready' && !ready) {
            ready = true;
            this.checkResume(replay, ackedAtOpen, unknownAtOpen, acceptedAtOpen);
          }
          if (e.event !== 'msg' || e.id === undefined) continue;
          if (!ready) replay.add(e.id);
          this.arrive(e, onStream, ackedAtOpen);
          ids.push(e.id);
        }
        await this.ack(ids);
      }
      s.close();
    }
  }

  private arrive(e: SseEvent, onStream: Set<string>, ackedAtOpen: Set<string>): void {
    const id = e.id!;
    const sent = this.ledger.tried.get(id);
    if (!sent || !sent.targets.includes(this.device)) this.misrouted.add(id);
    else if (e.json?.from !== sent.from || e.json?.ct !== sent.ct) this.altered.add(id);
    if (ackedAtOpen.has(id) || onStream.has(id)) this.duplicated.add(id);
    onStream.add(id);
    this.received.add(id);
  }

  private checkResume(replay: Set<string>, ackedAtOpen: Set<string>, unknownAtOpen: Set<string>, acceptedAtOpen: number): void {
    this.replays++;
    const due = this.ledger.acceptedFor(this.device).slice(0, acceptedAtOpen);
    const gaps = due.filter((id) => !ackedAtOpen.has(id) && !unknownAtOpen.has(id) && !replay.has(id));
    if (gaps.length === 0) this.resumed++;
    else this.resumeGaps.push(...gaps.map((id) => `${id}@open${this.opens}`));
  }

  private async ack(ids: string[]): Promise<void> {
    // The protocol takes at most 500 ids per acknowledgement.
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const r = await this.c.post('/api/ack', { ids: chunk }, { device: this.device }).catch(() => null);
      if (r?.status === 204) {
        for (const id of chunk) {
          this.acked.add(id);
          this.ackUnknown.delete(id);
        }
      } else if (unknownOutcome(r)) {
        for (const id of chunk) if (!this.acked.has(id)) this.ackUnknown.add(id);
      } else this.errors.push(`ack: ${r!.status} ${r!.text}`);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stream?.close();
    await this.loop;
    this.loop = null;
  }
}

export interface Tally {
  accepted: number;
  deliveries: number;
  lost: number;
  duplicated: number;
  misrouted: number;
  altered: number;
  opens: number;
  replays: number;
  resumed: number;
}

export function tally(ledger: Ledger, readers: readonly Reader[]): Tally {
  const sum = (f: (r: Reader) => number) => readers.reduce((n, r) => n + f(r), 0);
  return {
    accepted: ledger.accepted.length,
    deliveries: sum((r) => ledger.acceptedFor(r.device).length),
    lost: ledger.missing(readers).length,
    duplicated: sum((r) => r.duplicated.size),
    misrouted: sum((r) => r.misrouted.size),
    altered: sum((r) => r.altered.size),
    opens: sum((r) => r.opens),
    replays: sum((r) => r.replays),
    resumed: sum((r) => r.resumed),
  };
}

/** Waits until every delivery answered 202 has arrived, or the deadline passes. */
export async function drain(ledger: Ledger, readers: readonly Reader[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (ledger.missing(readers).length > 0 && Date.now() < deadline) await pause(100);
}

/** A row of docs/RELIABILITY.md's tables, printed by the soak runs. */
export function printRow(cells: (string | number)[]): void {
  console.log(`| ${cells.join(' | ')} |`);
}
