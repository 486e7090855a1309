/** The protocol's limits (docs/API.md): value bounds, push TTL and rate limits; the rate limits are defaults the server config may override. */
export const LIMITS = {
  bodyBytes: 32768,
  ackBatch: 500,
  roomNameChars: 64,
  pushEndpointChars: 2048,
  clockWindowMs: 5 * 60 * 1000,
  pingIntervalMs: 20_000,
  pushTtlSeconds: 86_400,
  minCtBytes: 16,
  encryptedKeyMaxBytes: 4096,
  devicesPerAccount: 32,
  contactsPerAccount: 1000,
  membersPerRoom: 256,
  roomsPerAccount: 500,
  keysRetainedPerMember: 64,
  queuePerDevice: 10_000,
  queueRetentionMs: 30 * 24 * 3600 * 1000,
  sessionIdleMs: 30 * 24 * 3600 * 1000,
} as const;

/**
 * The attachment store (docs/API.md). A part's data travels as base64url inside a JSON body
 * under the 32 KiB body limit: 24,000 bytes make 32,000 characters, with room for the rest of
 * the body. Every part of a finished attachment but its last holds exactly `partBytes`.
 */
export const ATTACHMENT = {
  partBytes: 24_000,
  /** An upload not finished within a day is purged with its parts. */
  unfinishedTtlMs: 24 * 3600 * 1000,
} as const;

/** Defaults of the attachment settings an operator may change (ATTACHMENT_* and LIMIT_UPLOAD_BYTES_PER_MIN). */
export const DEFAULT_ATTACHMENTS = {
  maxBytes: 25 * 1024 * 1024,
  quotaBytes: 1024 * 1024 * 1024,
  uploadBytesPerMin: 200 * 1024 * 1024,
  ttlDays: 30,
} as const;

export const DEFAULT_RATES = {
  messagesPerMin: 30,
  writesPerMin: 60,
  registerPerHour: 5,
  loginPer10Min: 10,
  /** A second login bucket per client IP, across all nicks (docs/API.md). */
  loginPerIpPer10Min: 100,
  /** A third login bucket per nick, across the addresses that have not signed in to it lately (docs/API.md, rate limits). */
  loginPerNickPer10Min: 50,
} as const;

/** KDF parameter bounds and the defaults for new accounts (docs/API.md, docs/CRYPTO.md). */
export const KDF_BOUNDS = {
  m: { min: 19456, max: 1048576 },
  t: { min: 2, max: 16 },
  p: { min: 1, max: 4 },
} as const;

export const KDF_DEFAULTS = { alg: 'argon2id', m: 65536, t: 3, p: 1 } as const;

export const SESSION_COOKIE = 'svc_session';
