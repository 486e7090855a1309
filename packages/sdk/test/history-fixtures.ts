/**
 * History to move around in the transfer and export tests: records as the conversation layer
 * keeps them, with everything a chat holds (texts, replies, reactions, edits, deletions, receipts,
 * a message that did not open, a membership line), and two devices of one account joined by an
 * in-memory carrier that the tests deliver by hand (so they can drop, replay, reorder and forge).
 */
import { makeUlid } from '@svc/protocol';
import {
  decodePlaintext,
  deriveOwnKey,
  encodePlaintext,
  generateIdentity,
  HistoryTransfer,
  INFO_TRANSFER,
  MemoryStore,
  randomBytes,
  type ChatId,
  type ChatMessage,
  type HistoryMessage,
  type OutboxItem,
  type PlainInput,
  type TransferEvent,
  type TransferLink,
} from '../src/index.js';

const WORDS =
  'the a to and of I you it is that in we for on this be have with are just not so but what ok yes no lunch tomorrow meeting later see call time good great thanks sure maybe home work code coffee today tonight'.split(
    ' ',
  );
const pick = <T>(a: readonly T[]): T => a[Math.floor(Math.random() * a.length)]!;
const mid = (): string => Buffer.from(randomBytes(16)).toString('base64url');
export const ROOM_ID = 'AbCdEfGhIjKlMnOpQrStUg';

/** `n` records of `me` with bob and carol and in one room, oldest first, ending at `end`. */
export function makeHistory(n: number, me = 'alice', end = Date.now()): ChatMessage[] {
  const chats: { chat: ChatId; peers: string[] }[] = [
    { chat: 'dm:bob_1', peers: ['bob_1'] },
    { chat: 'dm:carol', peers: ['carol'] },
    { chat: `room:${ROOM_ID}`, peers: ['bob_1', 'carol'] },
  ];
  const out: ChatMessage[] = [];
  let ts = end - n * 30_000;
  for (let i = 0; i < n; i++) {
    ts += 1 + Math.floor(Math.random() * 59_000);
    const c = chats[i % chats.length]!;
    const from = Math.random() < 0.5 ? me : pick(c.peers);
    const body = Array.from({ length: 3 + Math.floor(Math.random() * 12) }, () => pick(WORDS)).join(' ');
    const m: ChatMessage = { id: makeUlid(ts, randomBytes), chat: c.chat, ts, from, sentAt: ts - 150, mid: mid(), kind: 'text', body };
    if (from === me) Object.assign(m, { state: 'sent', delivered: [...c.peers], read: c.peers.slice(0, 1) });
    else m.reported = 'read';
    const roll = i % 50;
    const earlier = out.filter((x) => x.chat === c.chat && x.kind === 'text' && !x.deleted).at(-1);
    if (roll === 7 && earlier) m.replyTo = earlier.id;
    if (roll === 11)
      Object.assign(m, { reactions: { '👍': [me], '🎉': c.peers.slice(0, 1) }, reactedAt: { [`${me} 👍`]: ts + 5, [`${c.peers[0]} 🎉`]: ts + 9 } });
    if (roll === 13 && from === me) Object.assign(m, { body: `${body} (edited)`, editedAt: ts + 60_000 });
    if (roll === 17) {
      m.deleted = true;
      delete m.body;
    }
    if (roll === 23) {
      delete m.body;
      delete m.mid;
      Object.assign(m, { kind: 'undecryptable', note: 'This message could not be decrypted.', sentAt: ts });
      delete m.state;
      delete m.delivered;
      delete m.read;
      delete m.reported;
    }
    if (roll === 29 && c.chat.startsWith('room:')) {
      for (const k of ['body', 'mid', 'state', 'delivered', 'read', 'reported'] as const) delete m[k];
      Object.assign(m, { kind: 'event', from: me, sentAt: ts, event: { what: 'joined', nicks: ['carol'] } });
    }
    out.push(m);
  }
  return out;
}

export async function fill(store: MemoryStore, records: readonly ChatMessage[]): Promise<void> {
  for (const r of records) await store.put(r);
}

export const transferKey = async (): Promise<CryptoKey> => deriveOwnKey(await generateIdentity(), INFO_TRANSFER);

export const CARRIER: ChatId = 'room:CarrierRoomXXXXXXXXw';

export interface FakeDevice {
  t: HistoryTransfer;
  store: MemoryStore;
  /** What its outbox holds, in order (the tests play the service). */
  out: OutboxItem[];
  events: TransferEvent[];
  link: TransferLink;
  deviceId: string;
}

let clock = 1_800_000_000_000;
export const advance = (ms: number): number => (clock += ms);

/** The devices the service lists for the account: every fake device, unless a test removed it. */
const made = new Set<string>();
export const removed = new Set<string>();

/** One device of `me`; `from` keeps the store and the outbox of an earlier instance (a reload). */
export function fakeDevice(key: CryptoKey, deviceId: string, from?: { store: MemoryStore; out: OutboxItem[] }, me = 'alice'): FakeDevice {
  const store = from?.store ?? new MemoryStore();
  const out = from?.out ?? [];
  const events: TransferEvent[] = [];
  const link: TransferLink = {
    me,
    deviceId,
    key,
    store,
    now: () => clock,
    carrier: async () => CARRIER,
    isCarrier: (chat) => chat === CARRIER,
    enqueue: async (chat, plain) => {
      out.push({ id: makeUlid(++clock, randomBytes), chat, plain, createdAt: clock, priority: 'bulk', state: 'waiting', attempts: 0 });
    },
    pending: () => out,
    drop: async (id) => {
      const i = out.findIndex((x) => x.id === id);
      if (i >= 0) out.splice(i, 1);
    },
    notify: () => undefined,
    devices: async () => [...made].filter((d) => !removed.has(d)),
  };
  made.add(deviceId);
  const t = new HistoryTransfer(link);
  t.on((e) => events.push(e));
  return { t, store, out, events, link, deviceId };
}

/** A message as the receiving side gets it: through the wire form and its schema check. */
export function arrive(plain: PlainInput, o: { from?: string; chat?: ChatId; sentAt?: number } = {}): HistoryMessage {
  const sentAt = o.sentAt ?? clock;
  const decoded = decodePlaintext(encodePlaintext({ ...plain, sentAt }));
  return {
    ok: true,
    id: makeUlid(clock, randomBytes),
    ts: clock,
    from: o.from ?? 'alice',
    chat: o.chat ?? CARRIER,
    plain: decoded,
    sentAt,
  } as HistoryMessage;
}

/**
 * The service at work: sends up to `n` items of `from`'s outbox, in order, to every device in
 * `to`, and tells `from` they were accepted. Returns what went.
 */
export async function pump(from: FakeDevice, to: FakeDevice[], n = Infinity): Promise<PlainInput[]> {
  const went: PlainInput[] = [];
  while (from.out.length > 0 && went.length < n) {
    const item = from.out.shift()!;
    advance(10);
    const sentAt = clock;
    await from.t.sent(item);
    for (const d of to) await d.t.handle(arrive(item.plain, { sentAt }));
    went.push(item.plain);
  }
  return went;
}

export const refusals = (d: FakeDevice): string[] => d.events.flatMap((e) => (e.type === 'refused' ? [`${e.kind}:${e.why}`] : []));
