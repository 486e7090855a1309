/**
 * SdkError: one error class for everything the SDK refuses or the service answers, carrying what
 * the caller needs to decide the next step (retry after N seconds, log in again, fix the input).
 */
import { ERROR_MESSAGE, ERROR_STATUS, isErrorCode, type ErrorCode } from '@svc/protocol';

/** Codes the SDK adds to the service's catalog, for failures that happen on the client side. */
export type ClientErrorCode =
  /** fetch failed (offline, DNS, connection reset): retry when the network is back. */
  | 'network'
  /** the service answered something that is not the documented form. */
  | 'bad_response'
  /** the service published KDF parameters outside the accepted bounds (a downgrade attempt). */
  | 'kdf_refused'
  /** the account's KDF parameters are below what this device expects (seen before, or the defaults): a possible downgrade. */
  | 'kdf_weak'
  /** the identity key blob did not open with this password, or does not match the public key. */
  | 'bad_identity'
  /** the app's keyCheck hook refused a peer's public key (trust on first use). */
  | 'untrusted_key'
  /** no key of this room is held by this client. */
  | 'no_room_key'
  /** the service lists a room member that no announcement of the room added: no key is wrapped for it, nothing is sent to the room. */
  | 'unannounced_member'
  /** this device holds no membership record of the room yet: it makes no key for it and sends nothing there. */
  | 'no_membership_record'
  /** the room's newest key was made by someone other than its recorded owner: nothing is sent under it. */
  | 'room_key_not_owner'
  /** the text does not fit in one message. */
  | 'too_long'
  /** the method needs a logged-in Messenger or a device. */
  | 'not_ready'
  /** a saved session (Messenger.resume) is malformed, of another format, or its keys do not match. */
  | 'bad_session'
  /** a history file (importHistory) is not one, of another account, or damaged; the message says which. */
  | 'bad_export'
  /** a downloaded attachment failed its check (a part's tag, its size or its SHA-256); the message says which. */
  | 'attachment_corrupt';

export type SdkErrorCode = ErrorCode | ClientErrorCode;

/** What the caller should do next; the UI can map it to a button or a banner. */
export type NextStep = 'retry' | 'retry_later' | 'log_in' | 'fix_input' | 'reload' | 'none';

const CLIENT_MESSAGE: Record<ClientErrorCode, string> = {
  network: 'The service cannot be reached; check the connection and retry.',
  bad_response: 'The service answered in an unexpected form; reload the app, and if it persists tell the operator.',
  kdf_refused: 'The service asked for key-derivation parameters that are too weak or too large; refusing them.',
  kdf_weak:
    'The service asks for a weaker key derivation than this account is known to use; this can mean someone is trying to make the password easier to guess. Nothing was sent.',
  bad_identity: 'The identity key does not open with this password or does not match the account.',
  untrusted_key: 'The peer key is not trusted; compare safety numbers before sending.',
  no_room_key: 'No key of this room is held; wait for a key rotation by the owner.',
  unannounced_member: 'The server lists a member nobody added; no room key was made. Remove that member, or add them yourself if you mean to.',
  no_membership_record: 'This device does not know yet who was added to this room; it waits for a record from your other devices.',
  room_key_not_owner: 'The room’s newest key was not made by its owner; nothing is sent under it until the owner makes a new one.',
  too_long: 'The message is too long; shorten it.',
  not_ready: 'Log in and register this device first.',
  bad_session: 'The saved session cannot be resumed; log in again.',
  bad_export: 'This history file cannot be imported.',
  attachment_corrupt: 'This file did not pass its check: it was damaged or altered, and was not kept.',
};

function nextStepFor(code: SdkErrorCode): NextStep {
  switch (code) {
    case 'rate_limited':
      return 'retry_later';
    case 'network':
    case 'internal':
      return 'retry';
    case 'unauthenticated':
    case 'not_ready':
    case 'bad_session':
      return 'log_in';
    case 'bad_response':
      return 'reload';
    case 'clock_skew':
      // The SDK corrects its clock from every response; one more try uses the corrected time.
      return 'retry';
    case 'kdf_refused':
    case 'kdf_weak':
    case 'bad_identity':
    case 'untrusted_key':
    case 'no_room_key':
    case 'unannounced_member':
    case 'no_membership_record':
    case 'room_key_not_owner':
    case 'unknown_device':
    case 'attachment_corrupt':
      return 'none';
    default:
      return 'fix_input';
  }
}

export class SdkError extends Error {
  readonly code: SdkErrorCode;
  /** HTTP status of the service's answer; 0 when the failure happened in the client. */
  readonly status: number;
  /** With `invalid`: the request field the service named. */
  readonly field: string | undefined;
  /** With `rate_limited`: seconds to wait before retrying (from Retry-After, at least 1). */
  readonly retryAfter: number | undefined;
  readonly next: NextStep;

  constructor(code: SdkErrorCode, opts: { status?: number; message?: string; field?: string; retryAfter?: number; cause?: unknown } = {}) {
    super(opts.message ?? defaultMessage(code, opts.retryAfter), opts.cause !== undefined ? { cause: opts.cause } : undefined);
    this.name = 'SdkError';
    this.code = code;
    this.status = opts.status ?? (isErrorCode(code) ? ERROR_STATUS[code] : 0);
    this.field = opts.field;
    this.retryAfter = opts.retryAfter;
    this.next = nextStepFor(code);
  }
}

function defaultMessage(code: SdkErrorCode, retryAfter?: number): string {
  if (code === 'rate_limited') return `Too many requests; retry after ${retryAfter ?? 1} s.`;
  if (code === 'unauthenticated') return 'The session ended; log in again.';
  if (isErrorCode(code)) return ERROR_MESSAGE[code];
  return CLIENT_MESSAGE[code];
}

export function isSdkError(e: unknown, code?: SdkErrorCode): e is SdkError {
  return e instanceof SdkError && (code === undefined || e.code === code);
}
