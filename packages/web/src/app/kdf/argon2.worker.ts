/**
 * Runs the SDK's Argon2id off the main thread (see worker-argon2.ts).
 * Messages in: {password, salt, m, t, p, length}; out: {progress} (about a hundred), then {hash} or {error}.
 */
import { argon2id, type Argon2Params } from '@svc/sdk/argon2';

type Job = Omit<Argon2Params, 'onProgress'>;

const scope = self as unknown as {
  onmessage: ((event: MessageEvent<Job>) => void) | null;
  postMessage(msg: unknown, transfer?: Transferable[]): void;
};

scope.onmessage = (event) => {
  try {
    const hash = argon2id({ ...event.data, onProgress: (progress) => scope.postMessage({ progress }) });
    scope.postMessage({ hash }, [hash.buffer]);
  } catch (err) {
    scope.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
};
