/** The SDK runs unchanged in browsers and Node: its source uses no Node modules or globals and no DOM-only globals. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : n.endsWith('.ts') ? [p] : [];
  });
}

const FORBIDDEN: [RegExp, string][] = [
  [/from ['"]node:/, 'node: import'],
  [/\bBuffer\b/, 'Buffer'],
  [/\bprocess\./, 'process'],
  [/\brequire\(/, 'require'],
  [/\bwindow\b/, 'window'],
  [/\bdocument\./, 'document'],
  [/\blocalStorage\b|\bsessionStorage\b|\bindexedDB\b/, 'DOM storage'],
  [/\bnavigator\./, 'navigator'],
];

test('SDK source imports no Node modules and touches no Node or DOM-only globals', () => {
  const all = files(SRC);
  assert.ok(all.length > 10);
  for (const f of all) {
    // Comments may name these things; code may not.
    const code = readFileSync(f, 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/^\s*\/\/.*$/gm, '');
    for (const [re, what] of FORBIDDEN) assert.doesNotMatch(code, re, `${what} in ${f.slice(SRC.length + 1)}`);
  }
});
