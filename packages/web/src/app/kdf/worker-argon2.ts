/**
 * The SDK's Argon2 backend for this app: the SDK's Argon2id (@noble/hashes, plain JavaScript), run in a module
 * Worker (argon2.worker.ts) so the page stays responsive while the password is stretched (seconds
 * with the default 64 MiB, 3 passes) and can draw the worker's progress. Passed to every Messenger
 * as `argon2` (account.ts). A module worker from our own origin is allowed by the CSP's
 * `default-src 'self'`; WebAssembly is not, which is why the Argon2id is plain JavaScript.
 */
import type { Argon2Fn } from '@svc/sdk';
import { scriptUrl } from '../script-urls.js';
import argon2Worker from './argon2.worker.ts?worker&url';

export const workerArgon2: Argon2Fn = ({ onProgress, ...job }) => {
  // A worker per derivation: its 64 MiB go away with it.
  const worker = new Worker(scriptUrl(argon2Worker), { type: 'module', name: 'argon2id' });
  return new Promise<Uint8Array>((resolve, reject) => {
    worker.onmessage = (event: MessageEvent<{ progress?: number; hash?: Uint8Array; error?: string }>) => {
      const data = event.data;
      if (typeof data.progress === 'number') {
        onProgress?.(data.progress);
        return;
      }
      worker.terminate();
      if (data.hash) resolve(data.hash);
      else reject(new Error(data.error ?? 'key derivation failed'));
    };
    worker.onerror = (event) => {
      worker.terminate();
      reject(new Error(event.message || 'key derivation worker failed'));
    };
    worker.postMessage(job);
  });
};
