/** Rate limiting: N hits per sliding window per key. A Redis implementation will share it between instances. */
export interface RateLimiter {
  /**
   * Counts a hit for `key` if fewer than `limit` hits fell in the last `windowMs`.
   * Returns 0 when allowed, otherwise the whole seconds (at least 1) until a hit would be allowed.
   * A refused hit is not counted, so hammering does not extend the wait.
   */
  hit(key: string, limit: number, windowMs: number): Promise<number>;
  close(): Promise<void>;
}
