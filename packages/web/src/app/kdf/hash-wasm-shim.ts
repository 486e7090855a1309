/**
 * Stands in for the `hash-wasm` package in the web build (vite.config.ts aliases it here).
 * The SDK derives the master secret with hash-wasm's argon2id, which compiles WebAssembly; the
 * service's CSP has no 'wasm-unsafe-eval', so browsers refuse that. This module offers the same
 * call, computed by the plain-JavaScript Argon2id in a worker, and reports progress to the UI.
 * Only `argon2id` is provided: it is all the SDK uses.
 */

export interface Argon2Options {
  password: string | Uint8Array;
  salt: string | Uint8Array;
  secret?: string | Uint8Array;
  ad?: string | Uint8Array;
  iterations: number;
  parallelism: number;
  memorySize: number;
  hashLength: number;
  outputType?: 'hex' | 'binary' | 'encoded';
}

type Listener = (fraction: number) => void;
const listeners = new Set<Listener>();

/** The UI listens here to draw a progress bar while a key derivation runs. */
export function onKdfProgress(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

function bytes(v: string | Uint8Array | undefined): Uint8Array | undefined {
  if (v === undefined) return undefined;
  return typeof v === 'string' ? new TextEncoder().encode(v) : v;
}

function hex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

export function argon2id(o: Argon2Options & { outputType: 'binary' }): Promise<Uint8Array>;
export function argon2id(o: Argon2Options): Promise<string>;
export function argon2id(o: Argon2Options): Promise<Uint8Array | string> {
  if (o.outputType === 'encoded') return Promise.reject(new Error('encoded output is not supported'));
  const worker = new Worker(new URL('./argon2.worker.ts', import.meta.url), { type: 'module', name: 'argon2id' });
  const job = {
    password: bytes(o.password),
    salt: bytes(o.salt),
    secret: bytes(o.secret),
    ad: bytes(o.ad),
    m: o.memorySize,
    t: o.iterations,
    p: o.parallelism,
    length: o.hashLength,
  };
  return new Promise<Uint8Array | string>((resolve, reject) => {
    worker.onmessage = (e: MessageEvent<{ progress?: number; hash?: Uint8Array; error?: string }>) => {
      const d = e.data;
      if (typeof d.progress === 'number') {
        for (const l of listeners) l(d.progress);
        return;
      }
      worker.terminate();
      if (d.hash) resolve(o.outputType === 'binary' ? d.hash : hex(d.hash));
      else reject(new Error(d.error ?? 'key derivation failed'));
    };
    worker.onerror = (e) => {
      worker.terminate();
      reject(new Error(e.message || 'key derivation worker failed'));
    };
    worker.postMessage(job);
  });
}
