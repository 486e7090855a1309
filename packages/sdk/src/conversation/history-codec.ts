/**
 * ChatMessage records in a compact, compressed form for the history transfer and the sealed
 * export, and the strict check every record passes before it is merged (records come from the
 * account's own devices, but a damaged or altered payload must change nothing).
 *
 * Form: DEFLATE (fflate) of the UTF-8 JSON `{"v":1,"n":N,"c":{field: [N values]}}`: one array per
 * field, null where a record lacks it, fields no record has left out. Columns compress better than
 * one object per record (the field names go once, like values sit together): about 55 bytes per
 * text record against 70. `ts` holds differences to the record before and `sentAt` the distance
 * to `ts`, which are small numbers.
 */
import { isId16, isNick, isUlid } from '@svc/protocol';
import { deflateSync, Inflate, inflateSync } from 'fflate';
import { fromUtf8, utf8 } from '../bytes.js';
import type { ChatMessage } from './model.js';
import { isEmoji } from '../wire/plaintext.js';
import { deadline } from './disappearing.js';
import { isTimerSeconds } from '../wire/timer-values.js';
import { ATTACHMENT_TYPES, checkAttachmentFields, checkPhotoFields, checkVoiceFields, type AttachmentRef } from '../wire/attachment-plain.js';

const FIELDS = [
  'id',
  'chat',
  'ts',
  'from',
  'sentAt',
  'mid',
  'kind',
  'body',
  'replyTo',
  'editedAt',
  'deleted',
  'reactions',
  'reactedAt',
  'delivered',
  'read',
  'reported',
  'state',
  'note',
  'event',
  'attachment',
  'expire',
  'seenAt',
  'pin',
] as const;
type Field = (typeof FIELDS)[number];
const FIELD_SET = new Set<string>(FIELDS);

/** Longest text a record may hold (a message's plaintext is at most 24320 bytes). */
const MAX_TEXT = 100_000;
const MID_RE = /^[A-Za-z0-9_-]{22}$/;
const KINDS = new Set(['text', 'undecryptable', 'unknown', 'event']);
const EVENTS = new Set(['joined', 'left', 'removed', 'created', 'owner', 'timer']);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isMs = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v);
const isText = (v: unknown, max = MAX_TEXT): v is string => typeof v === 'string' && v.length <= max;
const isNicks = (v: unknown): v is string[] => Array.isArray(v) && v.length <= 1024 && v.every(isNick);
const isChat = (v: unknown): v is ChatMessage['chat'] =>
  typeof v === 'string' && ((v.startsWith('dm:') && isNick(v.slice(3))) || (v.startsWith('room:') && isId16(v.slice(5))));

/** Own properties only, and never one that would reach an object's prototype. */
function entries(o: Obj): [string, unknown][] | null {
  const e = Object.entries(o);
  return e.length <= 4096 && e.every(([k]) => k !== '__proto__') ? e : null;
}

/**
 * A well-formed record, copied field by field (unknown fields dropped), or null. Only settled
 * records travel: a message still in the outbox (queued, sending, failed) stays on its device.
 */
export function checkRecord(v: unknown): ChatMessage | null {
  if (!isObj(v)) return null;
  const o = v;
  if (!isUlid(o.id) || !isChat(o.chat) || !isMs(o.ts) || !isNick(o.from) || !isMs(o.sentAt) || typeof o.kind !== 'string' || !KINDS.has(o.kind))
    return null;
  const m: ChatMessage = { id: o.id, chat: o.chat, ts: o.ts, from: o.from, sentAt: o.sentAt, kind: o.kind as ChatMessage['kind'] };
  if (o.mid !== undefined) {
    if (typeof o.mid !== 'string' || !MID_RE.test(o.mid)) return null;
    m.mid = o.mid;
  }
  if (o.body !== undefined) {
    if (!isText(o.body)) return null;
    m.body = o.body;
  }
  if (o.replyTo !== undefined) {
    if (!isUlid(o.replyTo)) return null;
    m.replyTo = o.replyTo;
  }
  if (o.editedAt !== undefined) {
    if (!isMs(o.editedAt)) return null;
    m.editedAt = o.editedAt;
  }
  if (o.deleted !== undefined) {
    if (o.deleted !== true) return null;
    m.deleted = true;
  }
  if (o.reactions !== undefined) {
    const e = isObj(o.reactions) ? entries(o.reactions) : null;
    if (!e || !e.every(([k, who]) => isEmoji(k) && isNicks(who))) return null;
    m.reactions = Object.fromEntries(e.map(([k, who]) => [k, [...new Set(who as string[])].sort()]));
  }
  if (o.reactedAt !== undefined) {
    const e = isObj(o.reactedAt) ? entries(o.reactedAt) : null;
    if (!e || !e.every(([k, at]) => isMs(at) && isNick(k.slice(0, k.indexOf(' '))) && isEmoji(k.slice(k.indexOf(' ') + 1)))) return null;
    m.reactedAt = Object.fromEntries(e) as Record<string, number>;
  }
  for (const f of ['delivered', 'read'] as const) {
    if (o[f] === undefined) continue;
    if (!isNicks(o[f])) return null;
    m[f] = [...new Set(o[f])].sort();
  }
  if (o.reported !== undefined) {
    if (o.reported !== 'delivered' && o.reported !== 'read') return null;
    m.reported = o.reported;
  }
  if (o.state !== undefined) {
    if (o.state !== 'sent') return null;
    m.state = 'sent';
  }
  if (o.note !== undefined) {
    if (!isText(o.note, 1000)) return null;
    m.note = o.note;
  }
  if (o.event !== undefined) {
    const ev = o.event;
    if (!isObj(ev) || typeof ev.what !== 'string' || !EVENTS.has(ev.what) || !isNicks(ev.nicks)) return null;
    m.event = { what: ev.what as NonNullable<ChatMessage['event']>['what'], nicks: [...ev.nicks] };
    if (ev.what === 'timer') {
      if (!isTimerSeconds(ev.seconds) || ev.nicks.length !== 1) return null;
      m.event.seconds = ev.seconds;
    } else if (ev.seconds !== undefined) return null;
  }
  if (o.expire !== undefined) {
    if (!isTimerSeconds(o.expire) || o.expire === 0) return null;
    m.expire = o.expire;
  }
  if (o.seenAt !== undefined) {
    if (!isMs(o.seenAt)) return null;
    m.seenAt = o.seenAt;
  }
  if (o.pin !== undefined) {
    const pin = o.pin;
    if (!isObj(pin) || (pin.op !== 'pin' && pin.op !== 'unpin') || !isNick(pin.by) || !isMs(pin.sentAt)) return null;
    if (typeof pin.mid !== 'string' || (pin.mid !== '' && !MID_RE.test(pin.mid))) return null;
    m.pin = { op: pin.op, by: pin.by, sentAt: pin.sentAt, mid: pin.mid };
  }
  if (o.attachment !== undefined) {
    const a = isObj(o.attachment) ? checkAttachmentRef(o.attachment) : null;
    if (!a) return null;
    m.attachment = a;
  }
  return m;
}

/**
 * A record's attachment as the message that brought it was checked on receipt (its caption is the
 * record's body): the same checks again, since a history file or transfer is read like any input.
 */
function checkAttachmentRef(o: Obj): AttachmentRef | null {
  const type = o.type;
  if (typeof type !== 'string' || !(ATTACHMENT_TYPES as readonly string[]).includes(type) || o.caption !== undefined) return null;
  const base = checkAttachmentFields(o);
  if (!base) return null;
  const ref: AttachmentRef = { ...base, type: type as AttachmentRef['type'] };
  if (type === 'photo') {
    const p = checkPhotoFields(o);
    return p ? { ...ref, ...p } : null;
  }
  if (type === 'voice') {
    const v = checkVoiceFields(o);
    return v ? { ...ref, ...v } : null;
  }
  return ref;
}

/**
 * Whether a record is history that may travel: not a message still on its way out, and not one
 * whose disappearing timer has run out (whether or not it was cut yet).
 */
export function isSettled(m: ChatMessage): boolean {
  if (m.expired) return false;
  const at = deadline(m);
  if (at !== undefined && at <= Date.now()) return false;
  return m.state === undefined || m.state === 'sent';
}

/** The columns of `records` as JSON text (before compression). */
export function recordsJson(records: readonly ChatMessage[]): string {
  const c: Partial<Record<Field, unknown[]>> = {};
  records.forEach((r, i) => {
    const row: Record<Field, unknown> = {
      ...(r as unknown as Record<Field, unknown>),
      ts: i === 0 ? r.ts : r.ts - records[i - 1]!.ts,
      sentAt: r.ts - r.sentAt,
    };
    for (const f of FIELDS) {
      const v = row[f];
      if (v === undefined) continue;
      const col = (c[f] ??= new Array<unknown>(records.length).fill(null));
      col[i] = v;
    }
  });
  return JSON.stringify({ v: 1, n: records.length, c });
}

/** Records read back, and how many were left out because they failed the check. */
export interface DecodedRecords {
  records: ChatMessage[];
  dropped: number;
}

/**
 * The records back from recordsJson's output; null when the form itself is malformed. A record
 * that fails checkRecord is left out and counted, not fatal: a contact can push one record past
 * a limit (many reactions), and that must not cost the rest of the history.
 */
export function recordsFromJson(v: unknown): DecodedRecords | null {
  if (!isObj(v) || v.v !== 1 || !isMs(v.n) || !isObj(v.c)) return null;
  const n = v.n;
  const cols = entries(v.c);
  if (!cols || !cols.every(([k, col]) => FIELD_SET.has(k) && Array.isArray(col) && col.length === n)) return null;
  const c = v.c as Record<string, unknown[]>;
  const out: ChatMessage[] = [];
  let dropped = 0;
  let ts = 0;
  for (let i = 0; i < n; i++) {
    const row: Obj = {};
    for (const [k] of cols) if (c[k]![i] !== null) row[k] = c[k]![i];
    if (!isInt(row.ts) || !isInt(row.sentAt)) return null;
    ts = i === 0 ? row.ts : ts + row.ts;
    row.ts = ts;
    row.sentAt = ts - row.sentAt;
    const m = checkRecord(row);
    if (m) out.push(m);
    else dropped++;
  }
  return { records: out, dropped };
}

/** The records that pass checkRecord (as it returns them), and how many did not: what may be written out. */
export function checkedRecords(records: readonly ChatMessage[]): DecodedRecords {
  const out: ChatMessage[] = [];
  let dropped = 0;
  for (const r of records) {
    // Log lines written before they had an id and author of their own stay on their device,
    // uncounted: they are not damaged, only of an older form.
    if (r.kind === 'event' && r.from === '') continue;
    const m = checkRecord(r);
    if (m) out.push(m);
    else dropped++;
  }
  return { records: out, dropped };
}

/** DEFLATE level 6: level 9 gains nothing on these records and is slower (chunks are fitted by trial). */
export function compress(json: string): Uint8Array {
  return deflateSync(utf8(json), { level: 6, mem: 4 });
}

/** Compressed bytes fed to the inflater at a time: one slice inflates to at most about 16 MiB. */
const INFLATE_SLICE = 16 * 1024;

/**
 * Inflates `bytes` a slice at a time and stops once the output passes `max` bytes (returning
 * null), so a small input that would inflate to gigabytes is refused without ever being held.
 */
export function inflateCapped(bytes: Uint8Array, max: number): Uint8Array | null {
  if (bytes.length === 0) throw new RangeError('no data');
  const parts: Uint8Array[] = [];
  let size = 0;
  const s = new Inflate((chunk) => {
    size += chunk.length;
    if (size <= max) parts.push(chunk);
  });
  for (let at = 0; at < bytes.length && size <= max; at += INFLATE_SLICE)
    s.push(bytes.subarray(at, at + INFLATE_SLICE), at + INFLATE_SLICE >= bytes.length);
  if (size > max) return null;
  const out = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** What decompressJson answers for input that would inflate past its `max`. */
export const TOO_LARGE = 'too large';

/** Inflates (at most `max` bytes when given) and parses the JSON; null when it is not valid, TOO_LARGE when larger. */
export function decompressJson(bytes: Uint8Array, max?: number): unknown {
  try {
    const out = max === undefined ? inflateSync(bytes) : inflateCapped(bytes, max);
    if (out === null) return TOO_LARGE;
    return JSON.parse(fromUtf8(out)) as unknown;
  } catch {
    return null;
  }
}
