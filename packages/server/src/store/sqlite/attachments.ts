/** Attachments of the SQLite store. Each function runs inside the caller's transaction. */
import { ATTACHMENT } from '@svc/protocol';
import type { AttachmentFinish, AttachmentPart, AttachmentRecord, Refusal } from '../types.js';
import type { Statements } from './statements.js';

/** better-sqlite3 binds a Buffer as a BLOB, not any Uint8Array. */
const blob = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength));

interface Row {
  uploader: string;
  created_at: number;
  finished_at: number | null;
  size: number | null;
  sha256: Uint8Array | null;
  version: number;
}

export function putPart(
  q: Statements,
  p: AttachmentPart,
): { ok: true } | Refusal<'attachment_conflict' | 'attachment_finished' | 'quota_exceeded' | 'unauthenticated'> {
  if (p.session !== undefined && !q.one('SELECT 1 FROM sessions WHERE id = ? AND nick = ?', p.session, p.nick)) return { error: 'unauthenticated' };
  const row = q.one<Row & { bytes: number }>('SELECT uploader, finished_at, bytes FROM attachments WHERE id = ?', p.id);
  if (row && row.uploader !== p.nick) return { error: 'attachment_conflict' };
  if (row && row.finished_at !== null) return { error: 'attachment_finished' };
  const before = row
    ? (q.one<{ n: number }>('SELECT length(data) AS n FROM attachment_parts WHERE attachment_id = ? AND n = ?', p.id, p.n)?.n ?? 0)
    : 0;
  // Each attachment counts at least one whole part, so the quota also bounds how many there are.
  const others = q.one<{ b: number }>(
    'SELECT COALESCE(SUM(MAX(bytes, ?)), 0) AS b FROM attachments WHERE uploader = ? AND id <> ?',
    ATTACHMENT.partBytes,
    p.nick,
    p.id,
  )!.b;
  const after = (row?.bytes ?? 0) - before + p.data.length;
  if (others + Math.max(after, ATTACHMENT.partBytes) > p.quotaBytes) return { error: 'quota_exceeded' };
  if (!row) q.run('INSERT INTO attachments (id, uploader, created_at) VALUES (?, ?, ?)', p.id, p.nick, p.now);
  q.run('INSERT OR REPLACE INTO attachment_parts (attachment_id, n, data) VALUES (?, ?, ?)', p.id, p.n, blob(p.data));
  q.run('UPDATE attachments SET bytes = bytes + ?, version = version + 1 WHERE id = ?', p.data.length - before, p.id);
  return { ok: true };
}

export function get(q: Statements, id: string): AttachmentRecord | null {
  const row = q.one<Row>('SELECT uploader, created_at, finished_at, size, sha256, version FROM attachments WHERE id = ?', id);
  if (!row) return null;
  const parts = q.all<{ n: number; bytes: number }>('SELECT n, length(data) AS bytes FROM attachment_parts WHERE attachment_id = ? ORDER BY n', id);
  return {
    id,
    uploader: row.uploader,
    createdAt: row.created_at,
    finishedAt: row.finished_at,
    size: row.size,
    sha256: row.sha256 ? new Uint8Array(row.sha256) : null,
    parts,
    version: row.version,
  };
}

export function readParts(q: Statements, id: string, from: number, limit: number): Uint8Array[] {
  return q
    .all<{ data: Buffer }>('SELECT data FROM attachment_parts WHERE attachment_id = ? AND n >= ? ORDER BY n LIMIT ?', id, from, limit)
    .map((r) => r.data);
}

export function finish(q: Statements, f: AttachmentFinish): 'finished' | 'changed' {
  const r = q.run(
    'UPDATE attachments SET finished_at = ?, size = ?, sha256 = ? WHERE id = ? AND uploader = ? AND finished_at IS NULL AND version = ?',
    f.now,
    f.size,
    blob(f.sha256),
    f.id,
    f.nick,
    f.version,
  );
  return r.changes === 1 ? 'finished' : 'changed';
}

export function remove(q: Statements, id: string, nick: string): { ok: true } | Refusal<'unknown_attachment' | 'not_uploader'> {
  const row = q.one<{ uploader: string }>('SELECT uploader FROM attachments WHERE id = ?', id);
  if (!row) return { error: 'unknown_attachment' };
  if (row.uploader !== nick) return { error: 'not_uploader' };
  q.run('DELETE FROM attachment_parts WHERE attachment_id = ?', id);
  q.run('DELETE FROM attachments WHERE id = ?', id);
  return { ok: true };
}

/** Removes unfinished uploads older than a day and finished attachments older than `ttlMs`. */
export function purge(q: Statements, now: number, ttlMs: number): number {
  const ids = [
    ...q.all<{ id: string }>('SELECT id FROM attachments WHERE finished_at IS NULL AND created_at < ?', now - ATTACHMENT.unfinishedTtlMs),
    ...q.all<{ id: string }>('SELECT id FROM attachments WHERE finished_at IS NOT NULL AND finished_at < ?', now - ttlMs),
  ];
  for (const { id } of ids) {
    q.run('DELETE FROM attachment_parts WHERE attachment_id = ?', id);
    q.run('DELETE FROM attachments WHERE id = ?', id);
  }
  return ids.length;
}
