/**
 * The one error catalog: every code the service answers with, and its HTTP status.
 * docs/API.md lists them. The server maps ApiError to HTTP in one
 * place; the SDK uses the same table to tell callers what went wrong.
 */
export const ERROR_STATUS = {
  invalid: 400,
  bad_json: 400,
  too_large: 413,
  not_found: 404,
  internal: 500,
  unauthenticated: 401,
  invalid_credentials: 401,
  rate_limited: 429,
  clock_skew: 400,
  unknown_device: 403,
  not_member: 403,
  unknown_key: 400,
  unknown_user: 404,
  self: 400,
  not_owner: 403,
  owner: 400,
  key_exists: 409,
  keys_mismatch: 400,
  room_conflict: 409,
  device_conflict: 409,
  bad_origin: 403,
  limit_reached: 409,
  id_conflict: 409,
  invalid_nick: 400,
  nick_taken: 409,
  invite_required: 403,
  invalid_invite: 403,
  unknown_attachment: 404,
  attachment_conflict: 409,
  attachment_finished: 409,
  attachment_mismatch: 400,
  not_uploader: 403,
  file_too_large: 413,
  quota_exceeded: 413,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** Human text for each code; not a contract, only a help for people reading responses. */
export const ERROR_MESSAGE: Record<ErrorCode, string> = {
  invalid: 'A field has the wrong shape.',
  bad_json: 'The body is not JSON.',
  too_large: 'The body is larger than 32 KiB.',
  not_found: 'No such route.',
  internal: 'Internal server error.',
  unauthenticated: 'Sign in first.',
  invalid_credentials: 'Wrong nick or key.',
  rate_limited: 'Too many requests; retry later.',
  clock_skew: 'The message time is too far from the server time.',
  unknown_device: 'The device is not one of this account.',
  not_member: 'Not a member of this room.',
  unknown_key: 'The key is not a key of this room.',
  unknown_user: 'No such user.',
  self: 'That is your own nick.',
  not_owner: 'Only the room owner may do this.',
  owner: 'The room owner cannot be removed.',
  key_exists: 'The room already has a key with this id.',
  keys_mismatch: 'The wrapped keys do not match the members.',
  room_conflict: 'A room with this id exists.',
  device_conflict: 'This device id belongs to another account.',
  bad_origin: 'The request origin is not allowed.',
  limit_reached: 'A limit of this account is reached.',
  id_conflict: 'This message id is already used.',
  invalid_nick: 'A nick is 2 to 32 characters of a-z, 0-9 and _.',
  nick_taken: 'This nick is taken.',
  invite_required: 'An invite code is required.',
  invalid_invite: 'The invite code is unknown, used up or expired.',
  unknown_attachment: 'No such attachment (never finished, deleted, or expired).',
  attachment_conflict: 'This attachment id is used by another account.',
  attachment_finished: 'This attachment is finished and no longer changes.',
  attachment_mismatch: 'The parts uploaded do not match the stated count, size or SHA-256.',
  not_uploader: 'Only the account that uploaded the attachment may delete it.',
  file_too_large: 'The attachment is larger than the service allows.',
  quota_exceeded: 'The attachments of this account would exceed its storage quota.',
};

export interface ErrorBody {
  error: ErrorCode;
  message: string;
  field?: string;
}

/** A refusal the caller can act on. `field` only accompanies `invalid`; `retryAfter` only `rate_limited`. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly field: string | undefined;
  readonly retryAfter: number | undefined;

  constructor(code: ErrorCode, opts: { field?: string; retryAfter?: number; message?: string } = {}) {
    super(opts.message ?? ERROR_MESSAGE[code]);
    this.name = 'ApiError';
    this.code = code;
    this.field = code === 'invalid' ? opts.field : undefined;
    this.retryAfter = opts.retryAfter;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  toBody(): ErrorBody {
    const body: ErrorBody = { error: this.code, message: this.message };
    if (this.field !== undefined) body.field = this.field;
    return body;
  }
}

/** Shorthand for the most common refusal. */
export function invalid(field: string): ApiError {
  return new ApiError('invalid', { field });
}

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.prototype.hasOwnProperty.call(ERROR_STATUS, code);
}
