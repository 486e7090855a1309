/**
 * Membership records between the account's own devices (docs/CRYPTO.md). A
 * device that lacks the record of a room it is listed in (a device signed in later) makes no key
 * for that room and sends nothing there: it asks the account's other devices (`records-request`),
 * and each answers with every record it holds (`records`), sealed under the account's transfer key
 * for the asking device and its request's nonce. Both travel in the account's private room, like
 * the history transfer, with no step of the person's: the records are the account's own, and only
 * a device that knows the password holds the transfer key.
 *
 *   tag  = iv || AES-256-GCM(transferKey, iv, empty, AAD "svc/records/v1|records-request|<nick>|<device>|<nonce>")
 *   data = iv || AES-256-GCM(transferKey, iv, DEFLATE({"v":1,"records":[…]}),
 *            AAD "svc/records/v1|records|<nick>|<device>|<nonce>|<seq>|<total>")
 *
 * A device takes an answer only to a request of its own that is still open (until no record is
 * missing, or for 7 days: a replayed old answer is refused), and from it only records of rooms it has none of (an announcement taken since is
 * newer than what another device kept).
 */
import { b64, randomBytes, unb64, utf8 } from '../bytes.js';
import type { ChatId } from '../envelopes.js';
import { compress, decompressJson } from './history-codec.js';
import { parseRecord, type MembershipRecord } from './membership-record.js';
import { MAX_PADDED_BYTES, MAX_RECORD_PARTS, type RecordsPlain, type RecordsRequestPlain } from '../wire/plaintext.js';
import type { TransferLink } from './transfer-types.js';
import { checkTag, makeTag, openData, sealData } from './transfer-wire.js';
import { IV_BYTES } from '../crypto/aead.js';

const LABEL = 'svc/records/v1';
/** The meta key of this device's open requests. */
export const K_RECORD_ASKS = 'records.asks';
/** A request stays open this long: the account's other devices may be away for days. */
export const ASK_OPEN_MS = 7 * 24 * 60 * 60_000;
/** A device asks again at most this often while records are missing. */
export const ASK_AGAIN_MS = 10 * 60_000;
/**
 * A record missing this long is asked for: a member just added sees the room listed a moment
 * before the announcement that starts its record, and should not ask its devices for that.
 */
export const ASK_AFTER_MS = 5_000;
/** A part never inflates to more than this. */
const INFLATE_MAX = 4 * 1024 * 1024;

interface Ask {
  nonce: string;
  at: number;
}

export interface RecordSource {
  /** The records this device holds for the rooms it is listed in. */
  held(): Promise<MembershipRecord[]>;
  /** Keeps a record a device of the account sent, if this device has none for its room. */
  adopt(rec: MembershipRecord): Promise<boolean>;
  /** The listed rooms this device holds no record of. */
  lacking(): Promise<string[]>;
}

export type RecordMessage = { from: string; chat: ChatId; plain: RecordsRequestPlain | RecordsPlain };

const requestAad = (nick: string, device: string, nonce: string): string => `${LABEL}|records-request|${nick}|${device}|${nonce}`;
const partAad = (nick: string, device: string, nonce: string, seq: number, total: number): string =>
  `${LABEL}|records|${nick}|${device}|${nonce}|${seq}|${total}`;

/** How many sealed bytes one part may carry, for parts addressed to `device`. */
function partCapacity(device: string): number {
  const probe = { v: 1, type: 'records', device, nonce: 'A'.repeat(22), seq: MAX_RECORD_PARTS - 1, total: MAX_RECORD_PARTS, data: '', sentAt: 1e13 };
  const chars = MAX_PADDED_BYTES - utf8(JSON.stringify(probe)).length;
  return Math.floor((chars * 3) / 4) - IV_BYTES - 16;
}

/** Records in compressed parts that each fit one message; a record too large for one part alone is left out. */
export function packRecords(records: readonly MembershipRecord[], capacity: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  let part: MembershipRecord[] = [];
  let bytes: Uint8Array | null = null;
  const pack = (list: MembershipRecord[]) => compress(JSON.stringify({ v: 1, records: list }));
  for (const r of records) {
    const z = pack([...part, r]);
    if (z.length <= capacity) {
      part.push(r);
      bytes = z;
      continue;
    }
    if (bytes) out.push(bytes);
    const alone = pack([r]);
    [part, bytes] = alone.length <= capacity ? [[r], alone] : [[], null];
  }
  if (bytes) out.push(bytes);
  return out;
}

export class RecordTransfer {
  private asks: Ask[] | null = null;
  /** Requests answered in this session (`<device> <nonce>`): a replayed one gets no second answer. */
  private readonly answered = new Set<string>();
  private queue: Promise<unknown> = Promise.resolve();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;

  constructor(
    private readonly link: () => TransferLink,
    private readonly source: RecordSource,
    private readonly onError: (e: unknown) => void = () => undefined,
    private readonly askAfterMs = ASK_AFTER_MS,
  ) {}

  /** A listed room has no record: the other devices are asked if it still has none in askAfterMs. */
  missing(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.source
        .lacking()
        .then((rooms) => (rooms.length > 0 ? this.ask() : undefined))
        .catch(this.onError);
    }, this.askAfterMs);
  }

  /** No more asking (sign-out). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private serial<T>(f: () => Promise<T>): Promise<T> {
    const run = this.queue.then(f, f);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async open(l: TransferLink): Promise<Ask[]> {
    this.asks ??= ((await l.store.getMeta(K_RECORD_ASKS)) as Ask[] | undefined) ?? [];
    return (this.asks = this.asks.filter((a) => a.at + ASK_OPEN_MS > l.now()));
  }

  /** A record is missing here: asks the other devices, unless a request went out a moment ago. Never throws. */
  ask(): Promise<void> {
    return this.serial(async () => {
      const l = this.link();
      const asks = await this.open(l);
      if (asks.some((a) => a.at + ASK_AGAIN_MS > l.now())) return;
      const nonce = b64(randomBytes(16));
      this.asks = [...asks, { nonce, at: l.now() }].slice(-8);
      await l.store.putMeta(K_RECORD_ASKS, this.asks);
      const tag = await makeTag(l.key, requestAad(l.me, l.deviceId, nonce));
      await l.enqueue(await l.carrier(), { type: 'records-request', device: l.deviceId, nonce, tag, sentAt: 0 });
    }).catch(this.onError);
  }

  /** A `records-request` or `records` message arrived; anything not from this account's devices in its private room is ignored. */
  handle(d: RecordMessage): Promise<void> {
    return this.serial(async () => {
      const l = this.link();
      if (d.from !== l.me || !l.isCarrier(d.chat)) return;
      const p = d.plain;
      if (p.type === 'records-request') return this.answer(l, p);
      if (p.device !== l.deviceId || !(await this.open(l)).some((a) => a.nonce === p.nonce)) return;
      const bytes = await openData(l.key, partAad(l.me, p.device, p.nonce, p.seq, p.total), unb64(p.data));
      const v = bytes ? decompressJson(bytes, INFLATE_MAX) : null;
      const list = typeof v === 'object' && v !== null && (v as { v?: unknown }).v === 1 ? (v as { records?: unknown }).records : null;
      if (!Array.isArray(list)) return;
      for (const r of list) {
        const rec = parseRecord(r, l.me);
        if (rec) await this.source.adopt(rec);
      }
      // Nothing missing any more: the request is closed, and an answer to it that comes later
      // (a replay, or another device's) is refused like any other.
      if ((await this.source.lacking()).length === 0) {
        this.asks = [];
        await l.store.putMeta(K_RECORD_ASKS, this.asks);
      }
    });
  }

  private async answer(l: TransferLink, p: RecordsRequestPlain): Promise<void> {
    const key = `${p.device} ${p.nonce}`;
    if (p.device === l.deviceId || this.answered.has(key)) return;
    if (!(await checkTag(l.key, requestAad(l.me, p.device, p.nonce), p.tag))) return;
    this.answered.add(key);
    const parts = packRecords(await this.source.held(), partCapacity(p.device)).slice(0, MAX_RECORD_PARTS);
    const chat = await l.carrier();
    for (const [seq, z] of parts.entries()) {
      const data = b64(await sealData(l.key, partAad(l.me, p.device, p.nonce, seq, parts.length), z));
      await l.enqueue(chat, { type: 'records', device: p.device, nonce: p.nonce, seq, total: parts.length, data, sentAt: 0 });
    }
  }
}
