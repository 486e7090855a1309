/** The checked-in vectors (fixtures/vectors.json, made by fixtures/make-vectors.mjs with node:crypto) and helpers to use them. */
import { readFileSync } from 'node:fs';

// Tests run from dist/test; the fixture stays in the source tree.
const FILE = new URL('../../test/fixtures/vectors.json', import.meta.url);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export const V: any = JSON.parse(readFileSync(FILE, 'utf8'));

export const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
export const unhex = (h: string): Uint8Array => new Uint8Array(Buffer.from(h, 'hex'));
export const fromB64 = (s: string): Uint8Array<ArrayBuffer> => new Uint8Array(Buffer.from(s, 'base64url'));

/** A fixture party's identity as the SDK holds one (non-extractable ECDH private key). */
export async function fixtureIdentity(nick: string): Promise<{ publicKey: string; privateKey: CryptoKey }> {
  const p = V.parties[nick];
  const privateKey = await crypto.subtle.importKey('pkcs8', fromB64(p.pkcs8), { name: 'ECDH', namedCurve: 'P-256' }, false, ['deriveBits']);
  return { publicKey: p.publicKey, privateKey: privateKey };
}
