/**
 * The password step: Argon2id (hash-wasm, WebAssembly, runs alike in browsers and Node) over the
 * password as UTF-8 in Unicode NFC, so the same password typed on different systems gives the same
 * master secret. The parameters come from the service per nick, so they are checked against
 * KDF_BOUNDS before use: a hostile service must not be able to downgrade the work factor.
 */
import { argon2id } from 'hash-wasm';
import { KDF_BOUNDS, KDF_DEFAULTS, isB64urlOfLength, isPlainObject, type Kdf } from '@svc/protocol';
import { b64, randomBytes, unb64, utf8 } from '../bytes.js';
import { SdkError } from '../errors.js';

export type { Kdf };
export { KDF_BOUNDS, KDF_DEFAULTS };

export const MASTER_BYTES = 32;
export const SALT_BYTES = 16;

/** The smallest parameters the bounds accept; for tests and benchmarks that make many accounts. */
export const KDF_MIN = { m: KDF_BOUNDS.m.min, t: KDF_BOUNDS.t.min, p: KDF_BOUNDS.p.min } as const;

/** Parameters for a new account (or a password change): defaults of decisions §12, a fresh 16-byte salt. */
export function newKdf(params: Partial<Pick<Kdf, 'm' | 't' | 'p'>> = {}): Kdf {
  return checkKdf({
    alg: 'argon2id',
    salt: b64(randomBytes(SALT_BYTES)),
    m: params.m ?? KDF_DEFAULTS.m,
    t: params.t ?? KDF_DEFAULTS.t,
    p: params.p ?? KDF_DEFAULTS.p,
  });
}

function inBounds(v: unknown, b: { min: number; max: number }): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= b.min && v <= b.max;
}

/**
 * Returns the parameters (only the known fields) when they are acceptable; throws SdkError
 * `kdf_refused` naming the offending field otherwise.
 */
export function checkKdf(kdf: unknown): Kdf {
  const refuse = (field: string) => new SdkError('kdf_refused', { field, message: `Refusing key-derivation parameters: ${field} is out of bounds.` });
  if (!isPlainObject(kdf)) throw refuse('kdf');
  if (kdf.alg !== 'argon2id') throw refuse('alg');
  if (!isB64urlOfLength(kdf.salt, SALT_BYTES)) throw refuse('salt');
  if (!inBounds(kdf.m, KDF_BOUNDS.m)) throw refuse('m');
  if (!inBounds(kdf.t, KDF_BOUNDS.t)) throw refuse('t');
  if (!inBounds(kdf.p, KDF_BOUNDS.p)) throw refuse('p');
  return { alg: 'argon2id', salt: kdf.salt, m: kdf.m, t: kdf.t, p: kdf.p };
}

/** Progress of the slow steps, for a UI that shows what is happening. */
export type ProgressStage = 'fetching_params' | 'deriving_key' | 'contacting_service' | 'opening_identity' | 'done';
export type OnProgress = (stage: ProgressStage) => void;

/** The password as bytes: UTF-8 of its NFC form. */
export function passwordBytes(password: string): Uint8Array {
  return utf8(password.normalize('NFC'));
}

/**
 * Plain Argon2id (version 0x13) with every input explicit, so reference vectors with short salts
 * can be checked through the same call path as deriveMaster. No bounds check here.
 */
export async function argon2idRaw(o: {
  password: Uint8Array;
  salt: Uint8Array;
  m: number;
  t: number;
  p: number;
  length?: number;
}): Promise<Uint8Array> {
  return argon2id({
    password: o.password,
    salt: o.salt,
    memorySize: o.m,
    iterations: o.t,
    parallelism: o.p,
    hashLength: o.length ?? MASTER_BYTES,
    outputType: 'binary',
  });
}

/** Master secret = Argon2id(NFC password, salt, m, t, p) → 32 bytes, after the bounds check. */
export async function deriveMaster(password: string, kdf: Kdf, onProgress?: OnProgress): Promise<Uint8Array> {
  const k = checkKdf(kdf);
  onProgress?.('deriving_key');
  return argon2idRaw({ password: passwordBytes(password), salt: unb64(k.salt, SALT_BYTES), m: k.m, t: k.t, p: k.p });
}
