/**
 * Request bodies: raw bytes are collected by the one content-type parser (with the 32 KiB limit)
 * and parsed here, inside the handler, so that session and rate-limit refusals come first as
 * docs/API.md orders them. A body that is not `application/json`, empty, or not JSON is bad_json.
 */
import { ApiError, isPlainObject } from '@svc/protocol';
import type { FastifyRequest } from 'fastify';

function isJsonType(ct: string | undefined): boolean {
  if (!ct) return false;
  return ct.split(';')[0]!.trim().toLowerCase() === 'application/json';
}

export function parseJson(req: FastifyRequest): unknown {
  const raw = req.body;
  if (!isJsonType(req.headers['content-type']) || !(raw instanceof Buffer) || raw.length === 0) throw new ApiError('bad_json');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
  } catch {
    throw new ApiError('bad_json');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ApiError('bad_json');
  }
}

/** A JSON body whose fields are read one by one; JSON that is not an object has no fields, so its first field check fails. */
export function parseJsonObject(req: FastifyRequest): Record<string, unknown> {
  const v = parseJson(req);
  return isPlainObject(v) ? v : {};
}
