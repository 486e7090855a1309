/**
 * Byte helpers shared by the crypto files. Only TextEncoder/TextDecoder and WebCrypto's
 * getRandomValues, so they run unchanged in browsers and Node 20.
 */
import { decodeB64url, encodeB64url } from '@svc/protocol';

const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

export function utf8(s: string): Uint8Array {
  return enc.encode(s);
}

/** Strict UTF-8 decoding: malformed bytes throw instead of turning into U+FFFD. */
export function fromUtf8(b: Uint8Array): string {
  return dec.decode(b);
}

export function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  globalThis.crypto.getRandomValues(out);
  return out;
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export const b64 = encodeB64url;

/** Decodes b64url that must be valid (and, when given, exactly `len` bytes); throws otherwise. */
export function unb64(s: string, len?: number): Uint8Array {
  const b = typeof s === 'string' ? decodeB64url(s) : null;
  if (!b || (len !== undefined && b.length !== len)) throw new TypeError(`not b64url${len !== undefined ? ` of ${len} bytes` : ''}`);
  return b;
}

/**
 * WebCrypto takes a BufferSource; TypeScript 5.7+ types Uint8Array generically, so hand it a
 * plain ArrayBuffer-backed view to satisfy both runtimes' typings.
 */
export function buf(b: Uint8Array): Uint8Array<ArrayBuffer> {
  return b.buffer instanceof ArrayBuffer && b.byteOffset === 0 && b.byteLength === b.buffer.byteLength
    ? (b as Uint8Array<ArrayBuffer>)
    : new Uint8Array(b);
}

export const subtle = (): SubtleCrypto => globalThis.crypto.subtle;
