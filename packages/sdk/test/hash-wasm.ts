/**
 * hash-wasm's Argon2id (WebAssembly) as an SDK Argon2 backend, for Node tests only: it is several
 * times faster than the SDK's plain-JavaScript Argon2id, and it is an independent implementation
 * to cross-check that one against. The SDK itself never imports it (browsers under the service's
 * CSP cannot compile WebAssembly).
 */
import { argon2id } from 'hash-wasm';
import type { Argon2Fn } from '../src/index.js';

export const hashWasmArgon2: Argon2Fn = (i) =>
  argon2id({ password: i.password, salt: i.salt, memorySize: i.m, iterations: i.t, parallelism: i.p, hashLength: i.length, outputType: 'binary' });
