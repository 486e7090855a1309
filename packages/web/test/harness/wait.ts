/** Polling for conditions that are not on a page (the database, the server's view). */

export const PATIENCE = 15_000;

/**
 * Calls `probe` until it returns a value other than undefined, or throws the last failure (or a
 * timeout naming `what`) after `timeout` ms. The answer is awaited, never slept for.
 */
export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeout = PATIENCE): Promise<T> {
  const deadline = Date.now() + timeout;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const why = last instanceof Error ? `: ${last.message}` : '';
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${why}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
