/**
 * What the log keeps of an error: its message, code and stack, nothing else (docs/API.md).
 * A PostgreSQL error carries the values of the row it failed on (`detail`: "Key (nick)=(alice)
 * already exists."), the statement context (`where`) and more; other libraries attach queries
 * and parameters. None of that is read here.
 *
 * The message itself can hold a value too: PostgreSQL words some errors as `invalid input syntax
 * for type integer: "alice"` or `value "…" is out of range`, and Node's JSON.parse quotes the text
 * it failed on. Quoted parts are therefore kept only when they name a database object
 * (`constraint "accounts_pkey"`, `relation "rooms"`), which is what makes a message useful, and
 * replaced by "…" otherwise; byte sequences (`0xe2 0x82`) go too. The first line of the stack
 * repeats the message, so the stack is rebuilt from the cleaned message and the call frames.
 */

export interface LoggedError {
  message: string;
  code?: string;
  stack?: string;
}

/** Words after which PostgreSQL quotes the name of an object, never a value. */
const OBJECT_KINDS =
  'constraint|relation|table|column|index|schema|sequence|type|function|operator|encoding|database|role|view|trigger|extension|collation|domain|savepoint|cursor|parameter|channel';
const QUOTED = /("|')(?:[^"'\\]|\\.)*?\1/g;
const KEEP = new RegExp(`(?:${OBJECT_KINDS})\\s+$`, 'i');

export function cleanMessage(message: string): string {
  return message
    .replace(QUOTED, (m, q: string, offset: number, whole: string) => (KEEP.test(whole.slice(Math.max(0, offset - 20), offset)) ? m : `${q}…${q}`))
    .replace(/\b0x[0-9a-f]+\b/gi, '0x…');
}

export function errorForLog(err: unknown): LoggedError {
  if (!(err instanceof Error) && (typeof err !== 'object' || err === null)) return { message: cleanMessage(String(err)) };
  const e = err as { name?: unknown; message?: unknown; code?: unknown; stack?: unknown };
  const message = cleanMessage(typeof e.message === 'string' ? e.message : '');
  const out: LoggedError = { message };
  if (typeof e.code === 'string' || typeof e.code === 'number') out.code = String(e.code);
  if (typeof e.stack === 'string') {
    const frames = e.stack.split('\n').filter((l) => /^\s+at /.test(l));
    out.stack = [`${typeof e.name === 'string' ? e.name : 'Error'}: ${message}`, ...frames].join('\n');
  }
  return out;
}
