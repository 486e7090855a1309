/**
 * The web client: files of the web build for every path outside /api/ and /healthz, with
 * `index.html` for any other path so the client's own routes work (docs/API.md).
 * Hashed build assets (under /assets/) may be cached for a year; everything else is `no-cache`.
 */
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

function cacheHeaders(res: { setHeader(name: string, value: string): unknown }, path: string): void {
  res.setHeader('cache-control', /[\\/]assets[\\/]/.test(path) ? 'public, max-age=31536000, immutable' : 'no-cache');
}

export async function registerStatic(app: FastifyInstance, root: string): Promise<boolean> {
  if (!existsSync(join(root, 'index.html'))) return false;
  await app.register(fastifyStatic, {
    root,
    wildcard: false,
    cacheControl: false,
    etag: true,
    lastModified: true,
    index: ['index.html'],
    setHeaders: cacheHeaders,
  });
  return true;
}
