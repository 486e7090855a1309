/**
 * Known addresses shared through Redis (REDIS_URL set), so every instance lets the owner in from
 * the addresses they signed in from on any of them. One sorted set per nick, its members the
 * addresses scored by the time of their last sign-in, trimmed to the newest KNOWN_PER_NICK and
 * expiring KNOWN_FOR_MS after the last one. Nick and address are HMACs under the server secret,
 * as the limiter's keys are, so Redis holds neither in a form that can be read back.
 */
import { createHmac } from 'node:crypto';
import type { Redis } from 'ioredis';
import { KNOWN_FOR_MS, KNOWN_PER_NICK, type KnownAddresses } from './known.js';

export class RedisKnownAddresses implements KnownAddresses {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly secret: string,
    private readonly now: () => number = Date.now,
  ) {}

  private mac(what: string, value: string): string {
    return createHmac('sha256', this.secret).update(`${what}\0${value}`).digest('base64url').slice(0, 32);
  }

  async remember(nick: string, addr: string): Promise<void> {
    const key = `${this.prefix}known:${this.mac('nick', nick)}`;
    const now = this.now();
    const res = await this.redis
      .multi()
      .zadd(key, now, this.mac('addr', addr))
      .zremrangebyscore(key, '-inf', now - KNOWN_FOR_MS)
      .zremrangebyrank(key, 0, -(KNOWN_PER_NICK + 1))
      .pexpire(key, KNOWN_FOR_MS)
      .exec();
    const failed = res?.find(([err]) => err !== null);
    if (!res || failed) throw failed?.[0] ?? new Error('known addresses: transaction discarded');
  }

  async has(nick: string, addr: string): Promise<boolean> {
    const at = await this.redis.zscore(`${this.prefix}known:${this.mac('nick', nick)}`, this.mac('addr', addr));
    return at !== null && Number(at) > this.now() - KNOWN_FOR_MS;
  }

  async close(): Promise<void> {
    // The connection is the limiter's, which closes it.
  }
}
