/** Attachments of the PostgreSQL store. Each function runs inside the caller's transaction, or is one statement. */
import { ATTACHMENT } from '@svc/protocol';
import type { AttachmentFinish, AttachmentPart, AttachmentRecord, Refusal } from '../types.js';
import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { Sql } from './db.js';
import { intLiteral, textLiteral } from './literals.js';

interface Row {
  uploader: string;
  created_at: number;
  finished_at: number | null;
  size: number | null;
  sha256: Buffer | null;
  version: number;
}

const PART_REFUSALS = new Set(['attachment_conflict', 'attachment_finished', 'quota_exceeded', 'unauthenticated']);
type PartRefusal = 'attachment_conflict' | 'attachment_finished' | 'quota_exceeded' | 'unauthenticated';

/**
 * One round trip (put_attachment_part, migrations 10 to 12), which checks, locks and writes in one
 * transaction, committed without waiting for the WAL's flush; with `session`, it confirms it first.
 */
export async function putPart(q: Sql, p: AttachmentPart): Promise<{ ok: true } | Refusal<PartRefusal>> {
  const args: unknown[] = [p.id, p.nick, p.n, p.data, p.now, p.quotaBytes];
  if (p.session !== undefined) args.push(p.session);
  const call = `SELECT put_attachment_part($1, $2, $3, $4, $5, $6${p.session !== undefined ? ', $7' : ''}) AS r`;
  const r = (await q.one<{ r: string }>(call, args))!.r;
  if (r === 'ok') return { ok: true };
  if (PART_REFUSALS.has(r)) return { error: r as PartRefusal };
  throw new Error(`put_attachment_part answered ${r}`);
}

export async function get(q: Sql, id: string): Promise<AttachmentRecord | null> {
  const row = await q.one<Row>('SELECT uploader, created_at, finished_at, size, sha256, version FROM attachments WHERE id = $1', [id]);
  if (!row) return null;
  const parts = await q.all<{ n: number; bytes: number }>(
    'SELECT n, octet_length(data) AS bytes FROM attachment_parts WHERE attachment_id = $1 ORDER BY n',
    [id],
  );
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

/**
 * Parts read with a binary COPY: `pg` takes every result value as UTF-8 text, so a BYTEA would
 * come as hex (twice the bytes, and a slow decode); COPY's binary format carries the bytes as
 * they are stored. One COPY reads a bounded batch into memory and gives the connection back, so a
 * slow download never holds one while its client reads.
 */
export async function readParts(pool: pg.Pool, id: string, from: number, limit: number): Promise<Uint8Array[]> {
  const sql = `COPY (SELECT data FROM attachment_parts WHERE attachment_id = ${textLiteral(id)} AND n >= ${intLiteral(from)} ORDER BY n LIMIT ${intLiteral(limit)}) TO STDOUT (FORMAT binary)`;
  const client = await pool.connect();
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of client.query(copyTo(sql))) chunks.push(chunk as Buffer);
  } catch (e) {
    client.release(e as Error);
    throw e;
  }
  client.release();
  return binaryCopyFields(Buffer.concat(chunks));
}

/** The signature that opens PostgreSQL's binary COPY format. */
const COPY_SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/** The one field of each row of a binary COPY (PostgreSQL's COPY documentation, "Binary Format"), as views of `buf`. */
export function binaryCopyFields(buf: Buffer): Buffer[] {
  if (buf.length < 19 || !buf.subarray(0, 11).equals(COPY_SIGNATURE)) throw new Error('not a binary COPY');
  let at = 19 + buf.readUInt32BE(15);
  const out: Buffer[] = [];
  for (;;) {
    const fields = buf.readInt16BE(at);
    at += 2;
    if (fields === -1) return out;
    if (fields !== 1) throw new Error(`a binary COPY row of ${fields} fields`);
    const len = buf.readInt32BE(at);
    at += 4;
    if (len < 0 || at + len > buf.length) throw new Error('a binary COPY field past its end');
    out.push(buf.subarray(at, at + len));
    at += len;
  }
}

export async function finish(q: Sql, f: AttachmentFinish): Promise<'finished' | 'changed'> {
  const n = await q.run(
    'UPDATE attachments SET finished_at = $1, size = $2, sha256 = $3 WHERE id = $4 AND uploader = $5 AND finished_at IS NULL AND version = $6',
    [f.now, f.size, f.sha256, f.id, f.nick, f.version],
  );
  return n === 1 ? 'finished' : 'changed';
}

export async function remove(q: Sql, id: string, nick: string): Promise<{ ok: true } | Refusal<'unknown_attachment' | 'not_uploader'>> {
  const row = await q.one<{ uploader: string }>('SELECT uploader FROM attachments WHERE id = $1 FOR UPDATE', [id]);
  if (!row) return { error: 'unknown_attachment' };
  if (row.uploader !== nick) return { error: 'not_uploader' };
  await q.run('DELETE FROM attachment_parts WHERE attachment_id = $1', [id]);
  await q.run('DELETE FROM attachments WHERE id = $1', [id]);
  return { ok: true };
}

/** Removes unfinished uploads older than a day and finished attachments older than `ttlMs`. */
export async function purge(q: Sql, now: number, ttlMs: number): Promise<number> {
  const gone = await q.all<{ id: string }>(
    `DELETE FROM attachments WHERE (finished_at IS NULL AND created_at < $1) OR (finished_at IS NOT NULL AND finished_at < $2) RETURNING id`,
    [now - ATTACHMENT.unfinishedTtlMs, now - ttlMs],
  );
  if (gone.length > 0) await q.run('DELETE FROM attachment_parts WHERE attachment_id = ANY($1)', [gone.map((r) => r.id)]);
  return gone.length;
}
