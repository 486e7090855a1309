/**
 * The sealed history file (docs/CRYPTO.md, "History export"): every settled record of the store,
 * compressed and sealed under the account's export key, which derives from the identity, so the
 * password alone opens the file again on any device, also after a password change.
 *
 *   file = "svchist" | version (1 byte, 1) | nick length (1 byte) | nick | iv (12) | AES-256-GCM ciphertext
 *   AAD  = "svc/export/v1|<nick>"
 *   plaintext = DEFLATE of {"v":1,"exportedAt":<ms>,"records":<columns of history-codec.ts>}
 *
 * The nick stands in clear so that a file of another account gets its own error; it is bound in
 * the AAD, so changing it makes the file fail as damaged. Importing checks everything before it
 * merges anything (merge.ts), so a bad file changes nothing, and a second import adds nothing.
 * A record that fails the check (a contact pushed it past a limit) is left out and counted, on
 * export and on import, rather than costing the whole file. The plaintext inflates to at most
 * EXPORT_INFLATE_MAX bytes: a file that would inflate further is refused before anything is read.
 */
import { isNick } from '@svc/protocol';
import { concat, fromUtf8, utf8 } from '../bytes.js';
import type { Messenger } from '../client.js';
import { SdkError } from '../errors.js';
import type { Conversations } from './conversations.js';
import { checkedRecords, compress, decompressJson, isSettled, recordsFromJson, recordsJson, TOO_LARGE } from './history-codec.js';
import { mergeRecords } from './merge.js';
import type { ChatMessage } from './model.js';
import type { ConversationStore } from './store.js';
import { openData, sealData } from './transfer-wire.js';

const MAGIC = utf8('svchist');
export const EXPORT_VERSION = 1;
export const exportAad = (nick: string): string => `svc/export/v1|${nick}`;

export type ExportAccount = Pick<Messenger, 'nick' | 'exportKey'>;

/**
 * The largest plaintext a history file may inflate to: about 1.3 million records of text, far above
 * any real history, and still an amount a browser tab can hold.
 */
export const EXPORT_INFLATE_MAX = 256 * 1024 * 1024;

export interface ExportResult {
  file: Uint8Array;
  /** Records in the file. */
  records: number;
  /** Records of the store left out because they failed the check. */
  dropped: number;
}

export interface ImportResult {
  /** Records in the file that were read. */
  records: number;
  /** Records of the file left out because they failed the check. */
  dropped: number;
  /** New here, changed here, and already here as they stand. */
  added: number;
  changed: number;
  same: number;
  exportedAt: number;
}

const bad = (message: string): SdkError => new SdkError('bad_export', { message });
export const EXPORT_ERRORS = {
  notHistory: 'This is not a history file of this app.',
  newer: 'This history file was made by a newer version of the app; update the app to open it.',
  otherAccount: 'This history file belongs to another account; sign in to that account to import it.',
  damaged: 'This history file is damaged or was altered, and cannot be opened.',
  tooLarge: 'This history file holds more than this app opens at once, and was not imported.',
} as const;

/** The history in `store` as a sealed file, and how many records it holds and left out. */
export async function exportHistory(account: ExportAccount, store: ConversationStore, now = Date.now()): Promise<ExportResult> {
  const { records, dropped } = checkedRecords((await store.all()).filter(isSettled));
  const body = compress(`{"v":1,"exportedAt":${now},"records":${recordsJson(records)}}`);
  const nick = utf8(account.nick);
  const header = concat(MAGIC, Uint8Array.of(EXPORT_VERSION, nick.length), nick);
  const file = concat(header, await sealData(account.exportKey, exportAad(account.nick), body));
  return { file, records: records.length, dropped };
}

/** Opens and checks a file without changing anything; SdkError `bad_export` says what is wrong. */
export async function openExport(account: ExportAccount, file: Uint8Array): Promise<{ records: ChatMessage[]; dropped: number; exportedAt: number }> {
  if (file.length < MAGIC.length + 2 || !MAGIC.every((b, i) => file[i] === b)) throw bad(EXPORT_ERRORS.notHistory);
  const version = file[MAGIC.length]!;
  if (version !== EXPORT_VERSION) throw bad(version > EXPORT_VERSION ? EXPORT_ERRORS.newer : EXPORT_ERRORS.notHistory);
  const len = file[MAGIC.length + 1]!;
  const at = MAGIC.length + 2;
  let nick: string;
  try {
    nick = fromUtf8(file.subarray(at, at + len));
  } catch {
    throw bad(EXPORT_ERRORS.damaged);
  }
  if (!isNick(nick) || file.length < at + len) throw bad(EXPORT_ERRORS.damaged);
  if (nick !== account.nick) throw bad(EXPORT_ERRORS.otherAccount);
  const body = await openData(account.exportKey, exportAad(nick), file.subarray(at + len));
  if (!body) throw bad(EXPORT_ERRORS.damaged);
  const v = decompressJson(body, EXPORT_INFLATE_MAX) as { v?: unknown; exportedAt?: unknown; records?: unknown } | typeof TOO_LARGE | null;
  if (v === TOO_LARGE) throw bad(EXPORT_ERRORS.tooLarge);
  const read = v && v.v === 1 && typeof v.exportedAt === 'number' ? recordsFromJson(v.records) : null;
  if (!read) throw bad(EXPORT_ERRORS.damaged);
  return { ...read, exportedAt: v!.exportedAt as number };
}

/**
 * Merges a history file into the store (or a Conversations, whose views are told) without
 * duplicates; a file of another account or a damaged one throws SdkError `bad_export` and
 * changes nothing.
 */
export async function importHistory(account: ExportAccount, target: ConversationStore | Conversations, file: Uint8Array): Promise<ImportResult> {
  const { records, dropped, exportedAt } = await openExport(account, file);
  const conv = 'notify' in target ? target : null;
  const store = conv ? conv.store : (target as ConversationStore);
  const r = await mergeRecords(store, account.nick, records);
  conv?.notify({ changed: r.changed, imported: r.added });
  return { records: records.length, dropped, added: r.added.length, changed: r.changed.length, same: r.same, exportedAt };
}
