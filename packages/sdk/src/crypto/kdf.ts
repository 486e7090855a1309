/**
 * The password step: Argon2id over the password as UTF-8 in Unicode NFC, so the same password
 * typed on different systems gives the same master secret. The parameters come from the service
 * per nick, so they are checked against KDF_BOUNDS before use: a hostile service must not be able
 * to downgrade the work factor.
 *
 * Which Argon2id runs is the caller's choice (an Argon2Fn): by default @noble/hashes' audited
 * plain-JavaScript one (via argon2.ts) on the calling thread. A web app passes one that runs that same
 * function in a Worker, so the page stays responsive; Node tests and the benchmark may pass a
 * faster WebAssembly one. Every backend must give the same bytes: the vectors pin them.
 */
import { argon2id } from './argon2.js';
import { KDF_BOUNDS, KDF_DEFAULTS, isB64urlOfLength, isPlainObject, type Kdf } from '@svc/protocol';
import { b64, randomBytes, unb64, utf8 } from '../bytes.js';
import { SdkError } from '../errors.js';

export type { Kdf };
export { KDF_BOUNDS, KDF_DEFAULTS };

export const MASTER_BYTES = 32;
export const SALT_BYTES = 16;

/** The smallest parameters the bounds accept; for tests and benchmarks that make many accounts. */
export const KDF_MIN = { m: KDF_BOUNDS.m.min, t: KDF_BOUNDS.t.min, p: KDF_BOUNDS.p.min } as const;

/** Parameters for a new account (or a password change): the documented defaults (docs/CRYPTO.md), a fresh 16-byte salt. */
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

/**
 * Progress of the slow steps, for a UI that shows what is happening. During `deriving_key` the
 * callback is called again and again with the fraction done (0..1), so a progress bar can follow.
 */
export type ProgressStage = 'fetching_params' | 'deriving_key' | 'contacting_service' | 'opening_identity' | 'done';
export type OnProgress = (stage: ProgressStage, fraction?: number) => void;

/** What an Argon2id backend is given: every input explicit, no bounds check (vectors use tiny ones). */
export interface Argon2Input {
  password: Uint8Array;
  salt: Uint8Array;
  /** memory in KiB */
  m: number;
  /** passes */
  t: number;
  /** lanes */
  p: number;
  /** output bytes */
  length: number;
  /** Fraction done (0..1); a backend may call it, or not. */
  onProgress?: (fraction: number) => void;
}

/** An Argon2id implementation (version 0x13, no secret, no associated data). */
export type Argon2Fn = (input: Argon2Input) => Promise<Uint8Array>;

/** The default backend: @noble/hashes' plain-JavaScript Argon2id (argon2.ts), on the calling thread. */
export const argon2Js: Argon2Fn = async (input) => argon2id(input);

export interface DeriveOptions {
  /** Where Argon2id runs; argon2Js when not given. */
  argon2?: Argon2Fn | undefined;
  onProgress?: OnProgress | undefined;
}

/** The password as bytes: UTF-8 of its NFC form. */
export function passwordBytes(password: string): Uint8Array {
  return utf8(password.normalize('NFC'));
}

/** Master secret = Argon2id(NFC password, salt, m, t, p) → 32 bytes, after the bounds check. */
export async function deriveMaster(password: string, kdf: Kdf, o: DeriveOptions = {}): Promise<Uint8Array> {
  const k = checkKdf(kdf);
  const onProgress = o.onProgress;
  onProgress?.('deriving_key', 0);
  const pw = passwordBytes(password);
  try {
    const master = await (o.argon2 ?? argon2Js)({
      password: pw,
      salt: unb64(k.salt, SALT_BYTES),
      m: k.m,
      t: k.t,
      p: k.p,
      length: MASTER_BYTES,
      ...(onProgress ? { onProgress: (f: number) => onProgress('deriving_key', f) } : {}),
    });
    if (!(master instanceof Uint8Array) || master.length !== MASTER_BYTES) throw new TypeError('the Argon2id backend returned no 32-byte secret');
    return master;
  } finally {
    pw.fill(0);
  }
}
