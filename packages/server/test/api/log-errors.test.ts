/**
 * A 500 logs the error's message, code and stack, never the whole error object (docs/API.md):
 * a PostgreSQL error's `detail` and `where` carry row values such as nicks. On PostgreSQL
 * the store fails with real errors of the server; on SQLite with an error of the same shape.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { connect } from 'node:net';
import { assertError, signup, startServer, type Client, type TestServer } from '@svc/testkit/harness';
import { TEST_MODE } from '@svc/testkit/modes';

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(async () => {
  await server.close();
});

/** An error as node-postgres builds it from the server's ErrorResponse, every field filled. */
function pgShaped(message: string, code: string, nick: string): Error {
  const e = new pg.DatabaseError(message, 0, 'error');
  Object.assign(e, {
    severity: 'ERROR',
    code,
    detail: `Key (nick)=(${nick}) already exists.`,
    hint: `try another than ${nick}`,
    where: `SQL function "x" statement 1, parameter $1 = '${nick}'`,
    schema: 'public',
    table: 'accounts',
    constraint: 'accounts_pkey',
    internalQuery: `SELECT '${nick}'`,
    routine: '_bt_check_unique',
  });
  return e;
}

/** Makes every instance's store fail listing contacts with `make()`'s error, until the returned function is called. */
function failContacts(make: () => Promise<Error>): () => void {
  const undo: (() => void)[] = [];
  for (const app of server.apps) {
    const store = app.deps.store as unknown as { listContacts: (nick: string) => Promise<unknown> };
    store.listContacts = async () => {
      throw await make();
    };
    undo.push(() => delete (store as Partial<typeof store>).listContacts);
  }
  return () => undo.forEach((u) => u());
}

/** A real error of the PostgreSQL server, or one of the same shape on SQLite. */
async function storeError(sql: string, shaped: () => Error): Promise<Error> {
  if (TEST_MODE === 'sqlite') return shaped();
  try {
    await server.query(sql);
  } catch (err) {
    return err as Error;
  }
  throw new Error(`${sql} did not fail`);
}

async function loggedFor(alice: Client, err: () => Promise<Error>): Promise<Record<string, unknown>> {
  const before = server.logs.length;
  const restore = failContacts(err);
  try {
    assertError(await alice.get('/api/contacts'), 500, 'internal');
  } finally {
    restore();
  }
  const line = server.logs.slice(before).find((l) => l.msg === 'internal error');
  assert.ok(line, 'the 500 logged its cause');
  return line;
}

test('a 500 whose store error carries a nick in detail and where logs only message, code and stack, and no nick', async () => {
  const alice = await signup(server);
  const line = await loggedFor(alice, () =>
    storeError(`SELECT '${alice.nick}'::json`, () => pgShaped('duplicate key value violates unique constraint "accounts_pkey"', '23505', alice.nick)),
  );
  const err = line.err as Record<string, unknown>;
  assert.deepEqual(Object.keys(err).sort(), ['code', 'message', 'stack']);
  assert.match(String(err.code), /^[0-9A-Z]{5}$/, 'the SQLSTATE code is kept');
  assert.ok(String(err.message).length > 0);
  assert.match(String(err.stack), /\n\s+at /, 'the stack keeps its frames');
  assert.ok(!JSON.stringify(line).includes(alice.nick), `no nick in ${JSON.stringify(line)}`);
  for (const field of ['detail', 'where', 'hint', 'internalQuery', 'schema', 'table', 'routine', 'severity']) assert.ok(!(field in err), field);
  assert.equal((await alice.get('/api/contacts')).status, 200, 'the service keeps serving');
});

test('a 500 whose error message quotes a value logs the message with the value replaced, the object names kept', async () => {
  const alice = await signup(server);
  const line = await loggedFor(alice, () =>
    storeError(`SELECT '${alice.nick}'::int`, () => pgShaped(`invalid input syntax for type integer: "${alice.nick}"`, '22P02', alice.nick)),
  );
  const err = line.err as Record<string, unknown>;
  assert.equal(err.code, '22P02');
  assert.equal(err.message, 'invalid input syntax for type integer: "…"');
  assert.match(String(err.stack), /^\w+: invalid input syntax for type integer: "…"\n\s+at /);
  assert.ok(!JSON.stringify(line).includes(alice.nick));
});

test('a request answered before routing (bytes that are not HTTP) logs one warning with the parser code, and nothing it sent', async () => {
  const before = server.logs.length;
  const secret = `nick_${Date.now()}`;
  const { hostname, port } = new URL(server.urls[0]!);
  const answer = await new Promise<string>((resolve, reject) => {
    const s = connect(Number(port), hostname, () => s.write(`NOT-HTTP /api/users/${secret} \r\nX: ${secret}\r\n\r\n`));
    let got = '';
    s.on('data', (d) => (got += d.toString()));
    s.on('close', () => resolve(got));
    s.on('error', reject);
  });
  assert.match(answer, /^HTTP\/1\.1 400 /);
  await new Promise((r) => setTimeout(r, 50));
  const lines = server.logs.slice(before).filter((l) => l.msg === 'client error answered');
  assert.equal(lines.length, 1, JSON.stringify(server.logs.slice(before)));
  const line = lines[0]!;
  assert.equal(line.level, 40);
  assert.equal(line.answer, 'bad_json');
  assert.match(String(line.cause), /^HPE_/);
  assert.equal(line.pending, false);
  assert.ok(!JSON.stringify(line).includes(secret), JSON.stringify(line));
});
