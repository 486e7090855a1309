/**
 * The two ways of sending: closed loop (each sender sends its next message after its 202, to find
 * the maximum) and open loop (a fixed schedule in per-millisecond batches, for latency at a given
 * rate, which a closed loop would hide by slowing down with the server). Both are bounded in
 * count and in time. Both send through the raw keep-alive sockets (raw-http.ts) of the endpoint
 * of each sender's instance, one request in flight per socket, with each sender's request head
 * built once.
 */
import type { SendBody } from '../fixtures.js';
import type { Endpoint } from '../http.js';
import { jsonRequestHead, withJson, type RawAnswer } from '../raw-http.js';
import type { Recorder } from '../stats.js';

export interface Sender {
  cookie: string;
  device: string;
  /** The service process it sends through (an index into the loops' endpoints). */
  instance: number;
  next(): SendBody;
}

export interface SendResult {
  accepted: number;
  errors: number;
  firstError: string | null;
  /** Messages the open loop skipped because too many were still in flight (0 in a closed loop). */
  skipped: number;
  elapsedMs: number;
}

/** Each sender's `POST /api/messages` head (cookie, device) for the port it was built for. */
const heads = new WeakMap<Sender, { port: number; head: string }>();

function headOf(api: Endpoint, s: Sender): string {
  let h = heads.get(s);
  if (h?.port !== api.port) {
    h = { port: api.port, head: jsonRequestHead(api.port, 'POST', '/api/messages', { Cookie: s.cookie, 'X-Device': s.device }) };
    heads.set(s, h);
  }
  return h.head;
}

function post(apis: readonly Endpoint[], s: Sender, rec: Recorder | null, out: SendResult): Promise<void> {
  const api = apis[s.instance]!;
  const body = s.next();
  const request = withJson(headOf(api, s), JSON.stringify(body));
  rec?.sent(body.id, performance.now());
  return api.raw.request(request, 202).then(
    (r: RawAnswer) => {
      if (r.status === 202) out.accepted++;
      else {
        out.errors++;
        out.firstError ??= `HTTP ${r.status} ${r.body.slice(0, 200)}`;
      }
    },
    (e: Error) => {
      out.errors++;
      out.firstError ??= e.message;
    },
  );
}

const empty = (): SendResult => ({ accepted: 0, errors: 0, firstError: null, skipped: 0, elapsedMs: 0 });

/** Every sender sends, one message at a time, until `durationMs` passed or `maxCount` messages were sent in all. */
export async function closedLoop(
  apis: readonly Endpoint[],
  senders: Sender[],
  rec: Recorder | null,
  o: { durationMs: number; maxCount: number },
): Promise<SendResult> {
  const out = empty();
  const start = performance.now();
  const end = start + o.durationMs;
  let sent = 0;
  await Promise.all(
    senders.map(async (s) => {
      while (sent < o.maxCount && performance.now() < end) {
        sent++;
        await post(apis, s, rec, out);
        // Many errors in a row mean something is wrong with the setup, not slow: stop early.
        if (out.errors > 1000 && out.errors > out.accepted) return;
      }
    }),
  );
  out.elapsedMs = performance.now() - start;
  return out;
}

/**
 * Sends `rate` messages per second for `durationMs`, round-robin over the senders, on a fixed
 * schedule: every millisecond tick sends what is due by then. At most `maxInFlight` requests may
 * be open; what is due beyond that is skipped and counted, never sent late.
 */
export async function openLoop(
  apis: readonly Endpoint[],
  senders: Sender[],
  rec: Recorder | null,
  o: { rate: number; durationMs: number; maxInFlight: number },
): Promise<SendResult> {
  const out = empty();
  const total = Math.floor((o.rate * o.durationMs) / 1000);
  const pending = new Set<Promise<void>>();
  const start = performance.now();
  let fired = 0;
  let turn = 0;
  while (fired < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) * o.rate) / 1000));
    for (; fired < due; fired++) {
      if (pending.size >= o.maxInFlight) {
        out.skipped++;
        continue;
      }
      const p = post(apis, senders[turn++ % senders.length]!, rec, out);
      pending.add(p);
      void p.then(() => pending.delete(p));
    }
    if (performance.now() - start > o.durationMs + 5_000) break;
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(pending);
  out.elapsedMs = performance.now() - start;
  return out;
}
