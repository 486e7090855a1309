/** What the domain functions work with. Built once by createApp; nothing here knows HTTP. */
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { Store } from '../store/types.js';
import type { Bus } from '../bus/types.js';
import type { RateLimiter } from '../limits/types.js';
import type { KnownAddresses } from '../limits/known.js';
import type { Pusher } from '../push/types.js';
import type { AttachmentCache } from './attachment-cache.js';

export interface Secrets {
  /** Server secret for KDF decoys, shared by every instance through the store. */
  server: string;
  vapidPublicKey: string;
  vapidPrivateKey: string;
}

export interface Deps {
  config: Config;
  store: Store;
  bus: Bus;
  limiter: RateLimiter;
  /** Where each nick signed in from lately: its login budget does not hold those addresses. */
  known: KnownAddresses;
  pusher: Pusher;
  /** Finished attachments this instance finished or served lately. */
  attachmentCache: AttachmentCache;
  secrets: Secrets;
  log: FastifyBaseLogger;
  now(): number;
}

/** The authenticated caller of a request. */
export interface Caller {
  nick: string;
  sessionId: string;
  /** The X-Device header as sent (unchecked); undefined when absent. */
  device: string | undefined;
  /**
   * The owner of `device`, read together with the session (one lookup for both on PostgreSQL);
   * undefined when there is no well-formed X-Device. requireOwnDevice uses it for `device`.
   */
  deviceOwner?: Promise<string | null>;
  /**
   * The session was not read for this request but remembered from an earlier one
   * (http/remembered-sessions.ts): only a send takes such a caller, and it has the store read
   * the session and X-Device again with its facts (SendInput.session) and refuses it there.
   */
  provisional?: true;
}
