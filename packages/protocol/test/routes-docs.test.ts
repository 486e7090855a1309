/**
 * The route table and the API reference agree: docs/API.md lists every route of the table in its
 * route overview, gives each one its own section, and names in that section every error code the
 * table says the route may answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { API, ROUTES, routeErrors, routePath, type RouteSpec } from '@svc/protocol';

const doc = readFileSync(fileURLToPath(new URL('../../../../docs/API.md', import.meta.url)), 'utf8');

/** `/api/users/:nick` as the reference spells it: `/api/users/{nick}`. */
const docPath = (spec: RouteSpec) => spec.path.replace(/:([a-zA-Z]+)/g, '{$1}');

/** The text of the route's own section: from its `#### METHOD path` heading to the next heading. */
function section(spec: RouteSpec): string | null {
  const lines = doc.split('\n');
  const start = lines.findIndex(
    (l) => l.startsWith(`#### ${spec.method} ${docPath(spec)}`) && !l.slice(`#### ${spec.method} ${docPath(spec)}`.length).startsWith('/'),
  );
  if (start < 0) return null;
  const end = lines.findIndex((l, i) => i > start && /^#{1,4} /.test(l));
  return lines.slice(start, end < 0 ? undefined : end).join('\n');
}

test('docs/API.md lists every route of the table in its route overview', () => {
  for (const r of ROUTES) {
    const row = new RegExp(`^\\| ${r.method} \\| \`${docPath(r).replace(/[{}]/g, '\\$&')}(\\?[a-z]+=)?\` \\|`, 'm');
    assert.ok(row.test(doc), `${r.name}: ${r.method} ${docPath(r)} in the overview`);
  }
});

test('docs/API.md gives every route a section naming each error code the table lists for it', () => {
  for (const r of ROUTES) {
    const text = section(r);
    assert.ok(text, `${r.name}: a "#### ${r.method} ${docPath(r)}" section`);
    for (const code of routeErrors(r)) {
      if (code === 'internal' || code === 'bad_origin' || code === 'too_large') continue; // said once, in "Request pipeline"
      assert.ok(text.includes(code), `${r.name}: its section names ${code}`);
    }
  }
});

test('the route table has one entry per method and path, and W routes count against the write limit', () => {
  const keys = ROUTES.map((r) => `${r.method} ${r.path}`);
  assert.equal(new Set(keys).size, keys.length);
  for (const r of ROUTES) assert.equal(r.write, r.limit === 'write', r.name);
  assert.equal(ROUTES.length, Object.keys(API).length);
});

test('routePath fills path parameters, each as one encoded segment', () => {
  assert.equal(routePath(API.user, { nick: 'alice' }), '/api/users/alice');
  assert.equal(routePath(API.setPush, { id: 'a/b?c' }), '/api/devices/a%2Fb%3Fc/push');
  assert.throws(() => routePath(API.deleteRoom, {}), /missing path parameter id/);
});
