/**
 * The sealed history file (docs/CRYPTO.md): every settled record of the store,
 * compressed and sealed under the account's export key, which derives from the identity, so the
 * password alone opens the file again on any device, also after a password change.
 *
 *   file = "svchist" | version (1 byte, 1) | nick length (1 byte) | nick | iv (12) | AES-256-GCM ciphertext
 *   AAD  = "svc/export/v1|<nick>"
 *   plaintext = DEFLATE of {"v":1,"exportedAt":<ms>,"records":<columns of history-codec.ts>}
 *
 * With "Include photos and files" the file carries the files kept on the device that its records
 * name, a piece at a time, in version 2:
 *
 *   file    = "svchist" | version (1 byte, 2) | nick length (1 byte) | nick | segment*
 *   segment = length (4 bytes, big-endian) | iv (12) | AES-256-GCM(exportKey, iv, plaintext,
 *               AAD "svc/export/v2|<nick>|<index>|<1 for the last segment, else 0>")
 *   segment 0: DEFLATE of {"v":2,"exportedAt":<ms>,"records":<columns>,"files":[{"id","size"}…]}
 *   then each file in that order: its bytes in pieces of at most EXPORT_PIECE_BYTES,
 *     each segment = the attachment id (22 characters) | the piece
 *
 * The index and the last flag in the AAD make a segment moved, dropped or cut off fail; the
 * files are never compressed (photos and most files do not shrink), so they do not count against
 * EXPORT_INFLATE_MAX, which bounds the records alone.
 *
 * The nick stands in clear so that a file of another account gets its own error; it is bound in
 * the AAD, so changing it makes the file fail as damaged. Importing checks everything before it
 * merges anything (merge.ts), so a bad file changes nothing, and a second import adds nothing.
 * A record that fails the check (a contact pushed it past a limit) is left out and counted, on
 * export and on import, rather than costing the whole file. The plaintext inflates to at most
 * EXPORT_INFLATE_MAX bytes: a file that would inflate further is refused before anything is read.
 */
import { isId16, isNick } from '@svc/protocol';
import type { KeptFilesSource } from '../attachments/files.js';
import type { BlobLike } from '../attachments/source.js';
import { concat, fromUtf8, utf8 } from '../bytes.js';
import type { Messenger } from '../messenger.js';
import { SdkError } from '../errors.js';
import type { Conversations } from './conversations.js';
import { checkedRecords, compress, decompressJson, isSettled, recordsFromJson, recordsJson, TOO_LARGE } from './history-codec.js';
import { mergeRecords } from './merge.js';
import type { ChatMessage } from './model.js';
import type { ConversationStore } from './store.js';
import { archiveBytes, keptFiles, type ArchiveFile } from './transfer-archive.js';
import { openData, sealData } from './transfer-wire.js';

const MAGIC = utf8('svchist');
export const EXPORT_VERSION = 1;
/** The version of a file that carries files. */
export const EXPORT_VERSION_FILES = 2;
export const exportAad = (nick: string): string => `svc/export/v1|${nick}`;
const segmentAad = (nick: string, index: number, last: boolean): string => `svc/export/v2|${nick}|${index}|${last ? 1 : 0}`;
/** A file travels in pieces of at most this many bytes, each sealed on its own. */
export const EXPORT_PIECE_BYTES = 1024 * 1024;
const ID_CHARS = 22;

export type ExportAccount = Pick<Messenger, 'nick' | 'exportKey'>;

/**
 * The largest plaintext a history file may inflate to: about 1.3 million records of text, far above
 * any real history, and still an amount a browser tab can hold.
 */
export const EXPORT_INFLATE_MAX = 256 * 1024 * 1024;

export interface ExportResult {
  /** The file in pieces, in order (a browser makes a Blob of them): never one large array. */
  parts: Uint8Array[];
  /** Its length in bytes. */
  size: number;
  /** The whole file as one array (for small files and tests). */
  readonly file: Uint8Array;
  /** Records in the file. */
  records: number;
  /** Records of the store left out because they failed the check. */
  dropped: number;
  /** Files kept on the device that the file carries. */
  files: number;
}

export interface ExportOptions {
  /** "Include photos and files": the files kept on the device that the history names go in the file too. */
  files?: KeptFilesSource;
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
  /** Files the file carried, put back into the device's kept files. */
  files: number;
}

const bad = (message: string): SdkError => new SdkError('bad_export', { message });
export const EXPORT_ERRORS = {
  notHistory: 'This is not a history file of this app.',
  newer: 'This history file was made by a newer version of the app; update the app to open it.',
  otherAccount: 'This history file belongs to another account; sign in to that account to import it.',
  damaged: 'This history file is damaged or was altered, and cannot be opened.',
  tooLarge: 'This history file holds more than this app opens at once, and was not imported.',
} as const;

const result = (parts: Uint8Array[], records: number, dropped: number, files: number): ExportResult => ({
  parts,
  size: parts.reduce((n, p) => n + p.length, 0),
  get file() {
    return parts.length === 1 ? parts[0]! : concat(...parts);
  },
  records,
  dropped,
  files,
});

const u32 = (n: number): Uint8Array => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n);
  return b;
};

/**
 * The history in `store` as a sealed file, and how many records it holds and left out; with
 * `o.files`, the files kept on the device that its records name go with it (version 2).
 */
export async function exportHistory(
  account: ExportAccount,
  store: ConversationStore,
  now = Date.now(),
  o: ExportOptions = {},
): Promise<ExportResult> {
  const { records, dropped } = checkedRecords((await store.all()).filter(isSettled));
  const ids = new Set(records.flatMap((r) => (r.attachment ? [r.attachment.id] : [])));
  const files = o.files && ids.size > 0 ? await keptFiles(o.files, ids) : [];
  const nick = utf8(account.nick);
  if (files.length === 0) {
    const body = compress(`{"v":1,"exportedAt":${now},"records":${recordsJson(records)}}`);
    const header = concat(MAGIC, Uint8Array.of(EXPORT_VERSION, nick.length), nick);
    return result([concat(header, await sealData(account.exportKey, exportAad(account.nick), body))], records.length, dropped, 0);
  }
  const count = 1 + files.reduce((n, f) => n + Math.max(1, Math.ceil(f.size / EXPORT_PIECE_BYTES)), 0);
  const parts: Uint8Array[] = [concat(MAGIC, Uint8Array.of(EXPORT_VERSION_FILES, nick.length), nick)];
  let index = 0;
  const seal = async (plain: Uint8Array): Promise<void> => {
    const sealed = await sealData(account.exportKey, segmentAad(account.nick, index, index === count - 1), plain);
    parts.push(concat(u32(sealed.length), sealed));
    index++;
  };
  await seal(compress(`{"v":2,"exportedAt":${now},"records":${recordsJson(records)},"files":${JSON.stringify(files)}}`));
  for (const f of files) {
    const id = utf8(f.id);
    let pieces = 0;
    // archiveBytes reads a kept file a megabyte at a time; the range [27, 27 + size) is the file alone.
    for await (const piece of archiveBytes([], [f], o.files, 5 + ID_CHARS, 5 + ID_CHARS + f.size)) {
      await seal(concat(id, piece));
      pieces++;
    }
    if (pieces === 0) await seal(id);
  }
  return result(parts, records.length, dropped, files.length);
}

/** Reads a history file from bytes or a Blob (a browser's File), a range at a time. */
type Source = Uint8Array | BlobLike;
const sizeOf = (f: Source): number => (f instanceof Uint8Array ? f.length : f.size);
async function readRange(f: Source, start: number, end: number): Promise<Uint8Array> {
  return f instanceof Uint8Array ? f.subarray(start, end) : new Uint8Array(await f.slice(start, end).arrayBuffer());
}

/** The segments of a version 2 file after its header, each opened (null when one fails); `from` skips the first. */
async function* segments(
  account: ExportAccount,
  file: Source,
  at: number,
  from = 0,
): AsyncGenerator<{ plain: Uint8Array; last: boolean; index: number }> {
  const size = sizeOf(file);
  for (let index = 0; at < size; index++) {
    if (at + 4 > size) throw bad(EXPORT_ERRORS.damaged);
    const len = new DataView((await readRange(file, at, at + 4)).slice().buffer).getUint32(0);
    const end = at + 4 + len;
    if (end > size || (index > 0 && len > EXPORT_PIECE_BYTES + ID_CHARS + 28)) throw bad(EXPORT_ERRORS.damaged);
    const sealed = await readRange(file, at + 4, end);
    const last = end === size;
    at = end;
    if (index < from) continue;
    const plain = await openData(account.exportKey, segmentAad(account.nick, index, last), sealed);
    if (!plain) throw bad(EXPORT_ERRORS.damaged);
    yield { plain, last, index };
  }
}

export interface OpenedExport {
  records: ChatMessage[];
  dropped: number;
  exportedAt: number;
  /** The files it carries (each checked piece by piece already). */
  files: ArchiveFile[];
}

/** The file's version and where its body starts, once its header passed; the nick must be the account's. */
async function header(account: ExportAccount, file: Source): Promise<{ version: number; at: number }> {
  const head = await readRange(file, 0, MAGIC.length + 2 + 255);
  if (head.length < MAGIC.length + 2 || !MAGIC.every((b, i) => head[i] === b)) throw bad(EXPORT_ERRORS.notHistory);
  const version = head[MAGIC.length]!;
  if (version !== EXPORT_VERSION && version !== EXPORT_VERSION_FILES)
    throw bad(version > EXPORT_VERSION_FILES ? EXPORT_ERRORS.newer : EXPORT_ERRORS.notHistory);
  const len = head[MAGIC.length + 1]!;
  const at = MAGIC.length + 2;
  let nick: string;
  try {
    nick = fromUtf8(head.subarray(at, at + len));
  } catch {
    throw bad(EXPORT_ERRORS.damaged);
  }
  if (!isNick(nick) || head.length < at + len) throw bad(EXPORT_ERRORS.damaged);
  if (nick !== account.nick) throw bad(EXPORT_ERRORS.otherAccount);
  return { version, at: at + len };
}

/** The records of a file's JSON body, or the error that says why not. */
function readBody(body: Uint8Array, version: number): { records: ChatMessage[]; dropped: number; exportedAt: number; files: unknown } {
  const v = decompressJson(body, EXPORT_INFLATE_MAX) as
    { v?: unknown; exportedAt?: unknown; records?: unknown; files?: unknown } | typeof TOO_LARGE | null;
  if (v === TOO_LARGE) throw bad(EXPORT_ERRORS.tooLarge);
  const read = v && v.v === version && typeof v.exportedAt === 'number' ? recordsFromJson(v.records) : null;
  if (!read) throw bad(EXPORT_ERRORS.damaged);
  return { ...read, exportedAt: v!.exportedAt as number, files: v!.files };
}

const isFileList = (v: unknown): v is ArchiveFile[] =>
  Array.isArray(v) &&
  v.every(
    (f) =>
      typeof f === 'object' &&
      f !== null &&
      isId16((f as ArchiveFile).id) &&
      Number.isSafeInteger((f as ArchiveFile).size) &&
      (f as ArchiveFile).size >= 0,
  ) &&
  new Set(v.map((f) => (f as ArchiveFile).id)).size === v.length;

/**
 * Opens and checks a file (every segment of it, files too) without changing anything; SdkError
 * `bad_export` says what is wrong. A browser's File is read a piece at a time.
 */
export async function openExport(account: ExportAccount, file: Source): Promise<OpenedExport> {
  const { version, at } = await header(account, file);
  if (version === EXPORT_VERSION) {
    const body = await openData(account.exportKey, exportAad(account.nick), await readRange(file, at, sizeOf(file)));
    if (!body) throw bad(EXPORT_ERRORS.damaged);
    const { files: _f, ...read } = readBody(body, 1);
    return { ...read, files: [] };
  }
  let opened: Omit<OpenedExport, 'files'> | null = null;
  let files: ArchiveFile[] = [];
  // Which file each piece belongs to, and how much of it is still to come.
  let f = 0;
  let left = 0;
  let ended = false;
  for await (const seg of segments(account, file, at)) {
    if (seg.index === 0) {
      const { files: list, ...read } = readBody(seg.plain, 2);
      if (!isFileList(list) || list.length === 0) throw bad(EXPORT_ERRORS.damaged);
      opened = read;
      files = list;
      left = files[0]!.size;
    } else {
      const file = files[f];
      if (!file || fromUtf8(seg.plain.subarray(0, ID_CHARS)) !== file.id) throw bad(EXPORT_ERRORS.damaged);
      const n = seg.plain.length - ID_CHARS;
      if (n > left || (n === 0 && file.size > 0)) throw bad(EXPORT_ERRORS.damaged);
      left -= n;
      if (left === 0) left = files[++f]?.size ?? 0;
    }
    ended = seg.last;
  }
  if (!opened || !ended || f !== files.length) throw bad(EXPORT_ERRORS.damaged);
  return { ...opened, files };
}

/** Puts the files of a checked version 2 file into `kept`, each whole once its last piece is read. */
async function putFiles(account: ExportAccount, file: Source, kept: KeptFilesSource, files: ArchiveFile[], live: Set<string>): Promise<void> {
  const { at } = await header(account, file);
  let f = 0;
  let pieces: Uint8Array[] = [];
  let got = 0;
  for await (const seg of segments(account, file, at, 1)) {
    const piece = seg.plain.subarray(ID_CHARS);
    pieces.push(piece);
    got += piece.length;
    // Every segment holds a piece of one file (a file of no bytes has one empty piece).
    if (files[f] && got === files[f]!.size) {
      if (live.has(files[f]!.id)) await kept.put(files[f]!.id, pieces.length === 1 ? pieces[0]! : concat(...pieces));
      pieces = [];
      got = 0;
      f++;
    }
  }
}

/**
 * Merges a history file into the store (or a Conversations, whose views are told) without
 * duplicates, and puts the files it carries into `o.files`; a file of another account or a
 * damaged one throws SdkError `bad_export` and changes nothing (every piece is checked first).
 */
export async function importHistory(
  account: ExportAccount,
  target: ConversationStore | Conversations,
  file: Uint8Array | BlobLike,
  o: ExportOptions = {},
): Promise<ImportResult> {
  const { records, dropped, exportedAt, files } = await openExport(account, file);
  const conv = 'notify' in target ? target : null;
  const store = conv ? conv.store : (target as ConversationStore);
  const r = await mergeRecords(store, account.nick, records);
  // Only the files of records that live in the store once merged: a message deleted or expired
  // since the export was made must not bring its file back.
  if (o.files && files.length > 0) {
    const live = new Set<string>();
    for (const m of records) {
      const now = m.attachment ? await store.get(m.id) : undefined;
      if (now?.attachment && !now.deleted && !now.expired) live.add(now.attachment.id);
    }
    await putFiles(account, file, o.files, files, live);
  }
  conv?.notify({ changed: r.changed, imported: r.added });
  return {
    records: records.length,
    dropped,
    added: r.added.length,
    changed: r.changed.length,
    same: r.same,
    exportedAt,
    files: o.files ? files.length : 0,
  };
}
