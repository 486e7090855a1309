/** Rate limiting: N hits per sliding window per key, in process or shared through Redis. */

/** One sliding window: at most `limit` hits of `key` in any `windowMs`. */
export interface Bucket {
  key: string;
  limit: number;
  windowMs: number;
}

export interface RateLimiter {
  /**
   * Counts a hit for `key` if fewer than `limit` hits fell in the last `windowMs`.
   * Returns 0 when allowed, otherwise the whole seconds (at least 1) until a hit would be allowed.
   * A refused hit is not counted, so hammering does not extend the wait.
   */
  hit(key: string, limit: number, windowMs: number): Promise<number>;
  /**
   * One attempt that several buckets limit (login: per (IP, nick) and per IP). When every bucket
   * has room, a hit is counted in each and 0 returned; otherwise nothing is counted (so a refused
   * flood creates no keys) and the answer is the longest wait among the full buckets.
   */
  hitAll(buckets: readonly Bucket[]): Promise<number>;
  close(): Promise<void>;
}
