/** HKDF-SHA256 (RFC 5869) over WebCrypto, returning raw bytes. An empty salt means HashLen zero bytes. */
import { buf, subtle, utf8 } from '../bytes.js';

export async function hkdf(ikm: Uint8Array, salt: Uint8Array, info: string, length = 32): Promise<Uint8Array> {
  const base = await subtle().importKey('raw', buf(ikm), 'HKDF', false, ['deriveBits']);
  const bits = await subtle().deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: buf(salt), info: buf(utf8(info)) }, base, length * 8);
  return new Uint8Array(bits);
}

export async function sha256(data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await subtle().digest('SHA-256', buf(data)));
}
