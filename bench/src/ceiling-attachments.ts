/**
 * The ceiling's attachment store: the least a server can do for the attachment routes with the
 * same bodies as the service. Parts are decoded from their JSON and kept in memory; the finish
 * checks the part count, size and SHA-256 (a server that skipped them would not keep the same
 * promise) and joins the parts; a download writes the joined bytes. No owner, quota or storage.
 */
import { createHash } from 'node:crypto';
import type { ServerResponse } from 'node:http';

const uploads = new Map<string, Buffer[]>();
const finished = new Map<string, Buffer>();

const PART = /^\/api\/attachments\/([A-Za-z0-9_-]+)\/parts\/(\d+)$/;
const FINISH = /^\/api\/attachments\/([A-Za-z0-9_-]+)\/finish$/;
const ONE = /^\/api\/attachments\/([A-Za-z0-9_-]+)$/;

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

function putPart(id: string, n: number, body: string, res: ServerResponse): void {
  const { data } = JSON.parse(body) as { data: string };
  let parts = uploads.get(id);
  if (!parts) uploads.set(id, (parts = []));
  parts[n] = Buffer.from(data, 'base64url');
  res.writeHead(204);
  res.end();
}

function finish(id: string, body: string, res: ServerResponse): void {
  const b = JSON.parse(body) as { parts: number; size: number; sha256: string };
  const done = finished.get(id);
  if (done) return json(res, 200, { id, size: done.length, finishedAt: Date.now() });
  const parts = uploads.get(id) ?? [];
  const whole = parts.length === b.parts && parts.every(Boolean) ? Buffer.concat(parts) : null;
  if (!whole || whole.length !== b.size || createHash('sha256').update(whole).digest('base64url') !== b.sha256)
    return json(res, 400, { error: 'attachment_mismatch', message: 'the parts do not match' });
  uploads.delete(id);
  finished.set(id, whole);
  json(res, 201, { id, size: whole.length, finishedAt: Date.now() });
}

function download(id: string, res: ServerResponse): void {
  const file = finished.get(id);
  if (!file) return json(res, 404, { error: 'unknown_attachment', message: 'no such attachment' });
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': file.length, 'cache-control': 'no-store' });
  res.end(file);
}

function remove(id: string, res: ServerResponse): void {
  uploads.delete(id);
  finished.delete(id);
  res.writeHead(204);
  res.end();
}

/** The handler of an attachment route, given the request's body once read, or null for any other route. */
export function attachmentRoute(method: string, path: string): ((body: string, res: ServerResponse) => void) | null {
  let m: RegExpExecArray | null;
  if (method === 'PUT' && (m = PART.exec(path))) {
    const [, id, n] = m;
    return (body, res) => putPart(id!, Number(n), body, res);
  }
  if (method === 'POST' && (m = FINISH.exec(path))) {
    const id = m[1]!;
    return (body, res) => finish(id, body, res);
  }
  if ((method === 'GET' || method === 'DELETE') && (m = ONE.exec(path))) {
    const id = m[1]!;
    return method === 'GET' ? (_body, res) => download(id, res) : (_body, res) => remove(id, res);
  }
  return null;
}
