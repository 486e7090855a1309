/**
 * How svc ends: one line on standard error and an exit status a script can branch on. Every
 * failure becomes a CliError here, so no command prints a stack trace or an SDK error's code.
 */
import { isSdkError } from '@svc/sdk';

/** Exit statuses, documented in docs/BOTS.md. */
export const EXIT = {
  ok: 0,
  /** Refused by the service, or not sent in time. */
  failed: 1,
  /** The command line is wrong, or something it needs is missing. */
  usage: 2,
  /** The service cannot be reached. */
  unreachable: 3,
  /** A contact's key changed: nothing goes to them until `svc trust`. */
  keyChanged: 4,
  /** Wrong password, an ended session or a removed device: sign in again. */
  auth: 5,
} as const;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exit: number = EXIT.failed,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** The innermost cause's message (fetch failed → ECONNREFUSED …). */
function rootCause(e: unknown): string {
  let c: unknown = e;
  while (c instanceof Error && c.cause !== undefined) c = c.cause;
  const code = (c as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return c instanceof Error ? c.message : String(c);
}

/** Any failure as the one line and status svc ends with; `server` names the service in network failures. */
export function explain(e: unknown, server?: string): CliError {
  if (e instanceof CliError) return e;
  if (isSdkError(e)) {
    switch (e.code) {
      case 'network':
        return new CliError(`cannot reach the service${server ? ` at ${server}` : ''} (${rootCause(e)})`, EXIT.unreachable);
      case 'invalid_credentials':
        return new CliError('wrong nick or password', EXIT.auth);
      case 'bad_identity':
        return new CliError('the password does not open this account', EXIT.auth);
      case 'unauthenticated':
        return new CliError('the session ended (signed out, or the password changed): run svc login again', EXIT.auth);
      case 'unknown_device':
        return new CliError('this device was removed from the account: run svc login again', EXIT.auth);
      case 'untrusted_key':
        return new CliError(e.message, EXIT.keyChanged);
      case 'bad_session':
        return new CliError('the state file does not hold a usable session: run svc login again', EXIT.auth);
      default:
        return new CliError(e.message.replace(/\.$/, ''), EXIT.failed);
    }
  }
  return new CliError(e instanceof Error ? e.message : String(e), EXIT.failed);
}
