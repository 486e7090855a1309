/**
 * Runs Argon2id off the main thread, so the page stays responsive and can show progress while
 * the password is stretched (a second or more with the default 64 MiB, 3 passes).
 * Messages in: {password, salt, m, t, p, length, secret?, ad?}; out: {progress} then {hash} or {error}.
 */
import { argon2id, type Argon2Params } from './argon2.js';

type Job = Omit<Argon2Params, 'onProgress'>;

const scope = self as unknown as { onmessage: ((e: MessageEvent<Job>) => void) | null; postMessage(msg: unknown, transfer?: Transferable[]): void };

scope.onmessage = (e) => {
  try {
    let last = 0;
    const hash = argon2id({
      ...e.data,
      onProgress: (f) => {
        // About a hundred updates at most; each one is a message to the page.
        if (f - last >= 0.01 || f === 1) {
          last = f;
          scope.postMessage({ progress: f });
        }
      },
    });
    scope.postMessage({ hash }, [hash.buffer]);
  } catch (err) {
    scope.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
};
