/**
 * Web Push delivery: RFC 8291 encryption and RFC 8292 VAPID from the `web-push` library, sent
 * over our own checked connection. Pushes go through a bounded queue with bounded concurrency,
 * so a burst of sends cannot exhaust sockets or memory; when the queue is full, new pushes are
 * dropped and counted. A 404 or 410 deletes the subscription; other failures are logged without
 * endpoint, nick or room.
 */
import type { FastifyBaseLogger } from 'fastify';
import { LIMITS, type PushPayload } from '@svc/protocol';
import type { PushTarget, Store } from '../store/types.js';
import type { Pusher } from './types.js';
import { PushRefused, sendPushRequest, systemResolver, type Resolver } from './connection.js';

/**
 * The library is loaded with the first push, not at start (about 0.15 s of CPU): most starts,
 * and every admin command, send none.
 */
type WebPushLibrary = typeof import('web-push');
let library: Promise<WebPushLibrary> | undefined;
// A CommonJS module: its functions are on the default export.
const webPush = () => (library ??= import('web-push').then((m) => (m as unknown as { default: WebPushLibrary }).default));

export interface WebPusherOptions {
  store: Store;
  log: FastifyBaseLogger;
  vapid: { subject: string; publicKey: string; privateKey: string };
  allowPrivate: boolean;
  resolve?: Resolver;
  timeoutMs?: number;
  maxQueue?: number;
  concurrency?: number;
}

interface Job {
  target: PushTarget;
  body: string;
}

export class WebPusher implements Pusher {
  private readonly queue: Job[] = [];
  private active = 0;
  private closed = false;
  private idle: (() => void)[] = [];
  dropped = 0;
  sent = 0;
  failed = 0;

  constructor(private readonly o: WebPusherOptions) {}

  enqueue(targets: PushTarget[], payload: PushPayload): void {
    if (this.closed) return;
    const body = JSON.stringify({ title: payload.title, body: payload.body, chat: payload.chat });
    for (const target of targets) {
      if (this.queue.length >= (this.o.maxQueue ?? 10_000)) {
        this.dropped++;
        continue;
      }
      this.queue.push({ target, body });
    }
    this.pump();
  }

  private pump(): void {
    while (this.active < (this.o.concurrency ?? 16) && this.queue.length > 0) {
      const job = this.queue.shift()!;
      this.active++;
      void this.deliver(job).finally(() => {
        this.active--;
        this.pump();
        if (this.active === 0 && this.queue.length === 0) for (const f of this.idle.splice(0)) f();
      });
    }
  }

  private async deliver(job: Job): Promise<void> {
    const { target } = job;
    try {
      const webpush = await webPush();
      let details: ReturnType<WebPushLibrary['generateRequestDetails']>;
      try {
        details = webpush.generateRequestDetails({ endpoint: target.endpoint, keys: { p256dh: target.p256dh, auth: target.auth } }, job.body, {
          vapidDetails: this.o.vapid,
          TTL: LIMITS.pushTtlSeconds,
          contentEncoding: 'aes128gcm',
        });
      } catch {
        // The library's own checks of the VAPID keys and the subscription's keys. Their messages
        // may quote the endpoint, so the log names the step, not the message.
        throw new PushRefused('request not built (VAPID or subscription keys)');
      }
      const status = await sendPushRequest(
        { endpoint: details.endpoint, method: details.method, headers: details.headers, body: details.body ?? null },
        { resolve: this.o.resolve ?? systemResolver, allowPrivate: this.o.allowPrivate, timeoutMs: this.o.timeoutMs ?? 10_000 },
      );
      if (status === 404 || status === 410) {
        await this.o.store.dropPushSubscription(target.deviceId, target.endpoint);
        this.failed++;
      } else if (status >= 200 && status < 300) {
        this.sent++;
      } else {
        this.failed++;
        this.o.log.warn({ status }, 'push refused by the push service');
      }
    } catch (err) {
      this.failed++;
      // Never the endpoint URL, nick or room: only what kind of failure it was.
      const reason = err instanceof PushRefused ? err.message : ((err as { code?: string }).code ?? 'error');
      this.o.log.warn({ reason }, 'push failed');
    }
  }

  /** Resolves when nothing is queued or in flight. */
  drained(): Promise<void> {
    if (this.active === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  /** Stops taking pushes, drops what is still queued and waits (briefly) for those in flight. */
  async close(): Promise<void> {
    this.closed = true;
    this.dropped += this.queue.length;
    this.queue.length = 0;
    await Promise.race([this.drained(), new Promise((r) => setTimeout(r, 2_000).unref())]);
  }
}
