/**
 * Configuration (README.md "Configuration"), parsed and validated once at start. Only the entry point
 * reads the environment; everything else receives this typed object.
 */
import { ATTACHMENT, DEFAULT_ATTACHMENTS, DEFAULT_RATES } from '@svc/protocol';
import { vapidPairProblem } from './push/vapid-keys.js';

export interface Config {
  port: number;
  host: string;
  origin: string;
  /** true when the origin is https: the session cookie then carries `Secure`. */
  secureCookies: boolean;
  database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };
  redisUrl: string | null;
  /** Prefix of every Redis key and channel, so that several deployments can share one Redis. */
  redisPrefix: string;
  registration: 'open' | 'invite';
  vapid: { subject: string; publicKey: string | null; privateKey: string | null };
  rates: {
    messagesPerMin: number;
    writesPerMin: number;
    registerPerHour: number;
    loginPer10Min: number;
    loginPerIpPer10Min: number;
    loginPerNickPer10Min: number;
  };
  pushAllowPrivateTargets: boolean;
  /** The attachment store's limits, or null with ATTACHMENTS=off (its routes are then absent). */
  attachments: AttachmentConfig | null;
  /** Finished attachments kept in memory for their downloads (domain/attachment-cache.ts); 0 keeps none. */
  attachmentCacheBytes: number;
  /** Port of the Prometheus endpoint on 127.0.0.1 (0: any free port), or null: no metrics. */
  metricsPort: number | null;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Folder of the web build served for every path outside /api/ and /healthz. */
  webRoot: string;
  build: { revision: string; commitTime: number | null };
}

export interface AttachmentConfig {
  maxBytes: number;
  quotaBytes: number;
  uploadBytesPerMin: number;
  ttlDays: number;
}

/** How long a finished attachment is kept; with ATTACHMENTS=off, what is left is purged after the default time. */
export function attachmentTtlMs(c: Pick<Config, 'attachments'>): number {
  return (c.attachments?.ttlDays ?? DEFAULT_ATTACHMENTS.ttlDays) * 24 * 3600 * 1000;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function intVar(env: Env, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], def: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!(allowed as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
  return raw as T;
}

function parseOrigin(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`ORIGIN must be a URL like https://chat.example.org, got "${raw}"`);
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.pathname !== '/' || u.search || u.hash || u.username) {
    throw new ConfigError(`ORIGIN must be scheme://host[:port] with no path, got "${raw}"`);
  }
  return u.origin;
}

function parseDatabase(raw: string): Config['database'] {
  if (raw.startsWith('sqlite:')) {
    const path = raw.slice('sqlite:'.length);
    if (!path) throw new ConfigError('DATABASE_URL sqlite:<path> needs a path');
    return { kind: 'sqlite', path };
  }
  if (raw.startsWith('postgres://') || raw.startsWith('postgresql://')) return { kind: 'postgres', url: raw };
  throw new ConfigError(`DATABASE_URL must start with sqlite: or postgres://, got "${raw.replace(/\/\/.*@/, '//…@')}"`);
}

function parseAttachments(env: Env): AttachmentConfig | null {
  if (oneOf(env, 'ATTACHMENTS', ['on', 'off'] as const, 'on') === 'off') return null;
  const maxBytes = intVar(env, 'ATTACHMENT_MAX_BYTES', DEFAULT_ATTACHMENTS.maxBytes, 1, 1024 ** 3);
  const quotaBytes = intVar(env, 'ATTACHMENT_QUOTA_BYTES', DEFAULT_ATTACHMENTS.quotaBytes, 1, 1024 ** 4);
  if (quotaBytes < maxBytes) throw new ConfigError(`ATTACHMENT_QUOTA_BYTES (${quotaBytes}) must be at least ATTACHMENT_MAX_BYTES (${maxBytes})`);
  return {
    maxBytes,
    quotaBytes,
    // Counted in whole parts, so at least one part a minute.
    uploadBytesPerMin: intVar(env, 'LIMIT_UPLOAD_BYTES_PER_MIN', DEFAULT_ATTACHMENTS.uploadBytesPerMin, ATTACHMENT.partBytes, 1024 ** 4),
    ttlDays: intVar(env, 'ATTACHMENT_TTL_DAYS', DEFAULT_ATTACHMENTS.ttlDays, 1, 3650),
  };
}

export function parseConfig(env: Env, defaults: { webRoot: string; build: Config['build'] }): Config {
  const port = intVar(env, 'PORT', 8080, 0, 65535);
  const origin = parseOrigin(env.ORIGIN || `http://localhost:${port}`);
  const database = parseDatabase(env.DATABASE_URL || 'sqlite:./data/svc.db');
  const redisUrl = env.REDIS_URL || null;
  if (redisUrl !== null && !/^rediss?:\/\//.test(redisUrl)) throw new ConfigError('REDIS_URL must start with redis:// or rediss://');
  const redisPrefix = env.REDIS_PREFIX || 'svc:';
  if (!/^[A-Za-z0-9_:.-]{1,64}$/.test(redisPrefix)) throw new ConfigError('REDIS_PREFIX must be 1 to 64 characters of A-Z a-z 0-9 _ : . -');
  const vapidPublic = env.VAPID_PUBLIC_KEY || null;
  const vapidPrivate = env.VAPID_PRIVATE_KEY || null;
  if ((vapidPublic === null) !== (vapidPrivate === null)) throw new ConfigError('VAPID_PUBLIC_KEY and VAPID_PRIVATE_KEY must be set together');
  const vapidProblem = vapidPublic !== null && vapidPrivate !== null ? vapidPairProblem(vapidPublic, vapidPrivate) : null;
  if (vapidProblem !== null) throw new ConfigError(vapidProblem);
  const subject = env.VAPID_SUBJECT || 'mailto:admin@localhost';
  if (!/^(mailto:|https:\/\/)/.test(subject)) throw new ConfigError('VAPID_SUBJECT must be a mailto: or https: URL');
  const allowPrivate = env.PUSH_ALLOW_PRIVATE_TARGETS ?? '';
  if (allowPrivate !== '' && allowPrivate !== '0' && allowPrivate !== '1') throw new ConfigError('PUSH_ALLOW_PRIVATE_TARGETS must be 1 or unset');
  return {
    port,
    host: env.HOST || '127.0.0.1',
    origin,
    secureCookies: origin.startsWith('https:'),
    database,
    redisUrl,
    redisPrefix,
    registration: oneOf(env, 'REGISTRATION', ['open', 'invite'] as const, 'open'),
    vapid: { subject, publicKey: vapidPublic, privateKey: vapidPrivate },
    rates: {
      messagesPerMin: intVar(env, 'LIMIT_MESSAGES_PER_MIN', DEFAULT_RATES.messagesPerMin, 1, 10_000_000),
      writesPerMin: intVar(env, 'LIMIT_WRITES_PER_MIN', DEFAULT_RATES.writesPerMin, 1, 10_000_000),
      registerPerHour: intVar(env, 'LIMIT_REGISTER_PER_HOUR', DEFAULT_RATES.registerPerHour, 1, 10_000_000),
      loginPer10Min: intVar(env, 'LIMIT_LOGIN_PER_10MIN', DEFAULT_RATES.loginPer10Min, 1, 10_000_000),
      loginPerIpPer10Min: intVar(env, 'LIMIT_LOGIN_PER_IP_PER_10MIN', DEFAULT_RATES.loginPerIpPer10Min, 1, 10_000_000),
      loginPerNickPer10Min: intVar(env, 'LIMIT_LOGIN_PER_NICK_PER_10MIN', DEFAULT_RATES.loginPerNickPer10Min, 1, 10_000_000),
    },
    pushAllowPrivateTargets: allowPrivate === '1',
    attachments: parseAttachments(env),
    attachmentCacheBytes: intVar(env, 'ATTACHMENT_CACHE_BYTES', 64 * 1024 ** 2, 0, 1024 ** 4),
    metricsPort: env.METRICS_PORT ? intVar(env, 'METRICS_PORT', 0, 0, 65535) : null,
    logLevel: oneOf(env, 'LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    webRoot: defaults.webRoot,
    build: defaults.build,
  };
}
