/**
 * A write of the latest state, one at a time: whoever asks while one runs shares the next, which
 * starts when that one ends and writes the state as it is then. Asking a hundred times during one
 * write costs one more write, not a hundred.
 */
export class LatestWrite {
  private running: Promise<void> = Promise.resolve();
  private next: Promise<void> | null = null;

  constructor(private readonly work: () => Promise<void>) {}

  run(): Promise<void> {
    if (this.next) return this.next;
    const next = this.running.then(() => {
      this.next = null;
      return this.work();
    });
    this.next = next;
    // A failed write is its askers' to handle; the one after it runs all the same.
    this.running = next.catch(() => undefined);
    return next;
  }
}
