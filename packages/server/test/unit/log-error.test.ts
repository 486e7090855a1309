/** What the log keeps of an error (log-error.ts, docs/API.md): message, code and stack, values quoted in messages replaced. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cleanMessage, errorForLog } from '../../src/log-error.js';

test('PostgreSQL messages keep the names of objects and lose the values they quote', () => {
  const cases: [string, string][] = [
    ['duplicate key value violates unique constraint "accounts_pkey"', 'duplicate key value violates unique constraint "accounts_pkey"'],
    [
      'null value in column "nick" of relation "accounts" violates not-null constraint',
      'null value in column "nick" of relation "accounts" violates not-null constraint',
    ],
    [
      'insert or update on table "members" violates foreign key constraint "members_room_fkey"',
      'insert or update on table "members" violates foreign key constraint "members_room_fkey"',
    ],
    ['invalid input syntax for type integer: "alice"', 'invalid input syntax for type integer: "…"'],
    ['invalid input value for enum mood: "alice"', 'invalid input value for enum mood: "…"'],
    ['value "alice_1234567890" is out of range for type integer', 'value "…" is out of range for type integer'],
    ['invalid byte sequence for encoding "UTF8": 0xe2 0x82', 'invalid byte sequence for encoding "UTF8": 0x… 0x…'],
    ['syntax error at or near "alice"', 'syntax error at or near "…"'],
    [`Unexpected token 'a', "alice" is not valid JSON`, `Unexpected token '…', "…" is not valid JSON`],
  ];
  for (const [raw, logged] of cases) assert.equal(cleanMessage(raw), logged, raw);
});

test('an error is logged as message, code and stack only, the stack rebuilt from the cleaned message', () => {
  const e = Object.assign(new Error('invalid input syntax for type integer: "alice"'), {
    code: '22P02',
    detail: 'alice',
    where: 'alice',
    parameters: ['alice'],
  });
  const logged = errorForLog(e);
  assert.deepEqual(Object.keys(logged).sort(), ['code', 'message', 'stack']);
  assert.ok(!JSON.stringify(logged).includes('alice'));
  assert.match(logged.stack!, /^Error: invalid input syntax for type integer: "…"\n\s+at /);
  assert.deepEqual(errorForLog('plain "alice"'), { message: 'plain "…"' });
  assert.deepEqual(Object.keys(errorForLog({ message: 'x', code: 7 })).sort(), ['code', 'message']);
});
