/**
 * Free-form strings that are stored or looked up as given (invite codes, push endpoints). No such
 * value ever legitimately holds a control character or a lone surrogate, and PostgreSQL cannot
 * hold U+0000 in TEXT at all (it fails the statement, which would be a 500), while a lone
 * surrogate would be stored changed (as U+FFFD). Such input is refused as a shape error instead,
 * the same on both stores.
 */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function isStorableText(s: string): boolean {
  return !CONTROL.test(s) && !LONE_SURROGATE.test(s);
}
