/**
 * SQL literals, for the few statements sent without parameters: the send transaction sends its
 * BEGIN with its first statement and its COMMIT with its last as one simple query each, which
 * PostgreSQL's simple query protocol allows and its extended one (parameters) does not. That
 * halves the send's round trips (messages.ts). Every value is quoted as an escape string
 * (E'…', backslashes and quotes doubled), so its text is taken as given whatever
 * `standard_conforming_strings` says; numbers must be safe integers.
 */

export function textLiteral(v: string | null): string {
  return v === null ? 'NULL' : `E'${v.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}

export function textArray(vs: readonly (string | null)[]): string {
  return `ARRAY[${vs.map(textLiteral).join(',')}]::text[]`;
}

export function intLiteral(n: number): string {
  if (!Number.isSafeInteger(n)) throw new Error(`not an integer: ${n}`);
  return String(n);
}

export function bigintArray(ns: readonly number[]): string {
  return `ARRAY[${ns.map(intLiteral).join(',')}]::bigint[]`;
}

export function intArray(ns: readonly number[]): string {
  return `ARRAY[${ns.map(intLiteral).join(',')}]::int[]`;
}
