/** Turns any failure into a sentence for the user; the SDK's errors already say what to do next. */
import { isSdkError } from '@svc/sdk';

const FRIENDLY: Record<string, string> = {
  invalid_credentials: 'Wrong nick or password.',
  nick_taken: 'That nick is taken. Choose another one.',
  invalid_nick: 'A nick is 2 to 32 characters: lowercase letters a–z, digits and _.',
  invite_required: 'An invite code is needed to create an account here.',
  invalid_invite: 'That invite code is unknown, used up or expired.',
  unknown_user: 'There is no account with that nick.',
  self: 'That is your own nick.',
  limit_reached: 'A limit of this service was reached.',
  not_owner: 'Only the room’s owner can do that.',
  not_member: 'You are not a member of that room.',
  network: 'The service cannot be reached. Check the connection and try again.',
};

export function describeError(error: unknown): string {
  if (isSdkError(error)) {
    if (error.code === 'rate_limited') return `Too many requests. Try again in ${error.retryAfter ?? 1} s.`;
    return FRIENDLY[error.code] ?? error.message;
  }
  if (error instanceof Error) return error.message;
  return String(error);
}
