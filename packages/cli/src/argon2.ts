/**
 * Argon2id for the CLI: Node's own (node:crypto, native, since Node 24.7) when there is one, since
 * the account's default parameters take seconds in plain JavaScript; else the SDK's. Both give
 * the same bytes (test/argon2.test.ts checks it).
 */
import * as nodeCrypto from 'node:crypto';
import { argon2Js, type Argon2Fn } from '@svc/sdk';

type NativeArgon2 = (
  algorithm: 'argon2id',
  params: { message: Uint8Array; nonce: Uint8Array; parallelism: number; tagLength: number; memory: number; passes: number },
  cb: (err: Error | null, key: Buffer) => void,
) => void;

const native = (nodeCrypto as unknown as { argon2?: NativeArgon2 }).argon2;

export const nodeArgon2: Argon2Fn = native
  ? (i) =>
      new Promise((resolve, reject) =>
        native('argon2id', { message: i.password, nonce: i.salt, parallelism: i.p, tagLength: i.length, memory: i.m, passes: i.t }, (err, key) =>
          err ? reject(err) : resolve(new Uint8Array(key)),
        ),
      )
  : argon2Js;

export const hasNativeArgon2 = native !== undefined;
