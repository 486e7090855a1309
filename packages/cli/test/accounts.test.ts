/**
 * The account on a machine: signup and login write one sealed state file (mode 0600) that
 * nothing opens without the password or the key file; a second machine's login is one more
 * device of the same account; a wrong password and an unreachable service each end svc with one
 * clear line and a non-zero status, and leave no state behind.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Machine, nick, signedUp, startService, type Service } from './harness.js';

let service: Service;
const machines: Machine[] = [];
before(async () => {
  service = await startService();
});
after(async () => {
  for (const m of machines) m.remove();
  await service.stop();
});

function oneLine(stderr: string): string {
  const lines = stderr.split('\n').filter((l) => l !== '');
  assert.equal(lines.length, 1, `one line on standard error, got:\n${stderr}`);
  return lines[0]!;
}

test('signup writes one state file of mode 0600 that shows neither the nick, the keys nor the session', async () => {
  const alice = await signedUp(service, 'alice');
  machines.push(alice);
  assert.equal(statSync(alice.statePath).mode & 0o777, 0o600);
  assert.equal(statSync(join(alice.home, 'svc')).mode & 0o777, 0o700);
  const text = readFileSync(alice.statePath, 'utf8');
  assert.ok(!text.includes(alice.nick), 'the nick is sealed');
  assert.ok(!text.includes('svc_session'), 'the cookie is sealed');
  assert.deepEqual(Object.keys(JSON.parse(text)).sort(), ['ct', 'head', 'iv']);
  const r = await alice.run(['devices']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /\(this machine\)/);
});

test('the state file does not open without the password: one line, exit 5, and the file is unchanged', async () => {
  const bob = await signedUp(service, 'bob');
  machines.push(bob);
  const before = readFileSync(bob.statePath, 'utf8');
  const wrong = await bob.run(['devices'], { env: { SVC_PASSWORD: 'not the password' } });
  assert.equal(wrong.code, 5);
  assert.equal(oneLine(wrong.stderr), 'svc: the password does not open the state file of svc');
  assert.equal(wrong.stdout, '');
  const none = await bob.run(['devices'], { env: { SVC_PASSWORD: '' } });
  assert.equal(none.code, 2);
  assert.match(oneLine(none.stderr), /no password: set SVC_PASSWORD/);
  assert.equal(readFileSync(bob.statePath, 'utf8'), before);
});

test('with SVC_KEY_FILE the state is sealed under the key file: no password opens it, another key file does not either', async () => {
  const carol = new Machine('password of carol');
  machines.push(carol);
  const key = join(carol.home, 'key');
  writeFileSync(key, Buffer.alloc(32, 7), { mode: 0o600 });
  const name = nick('carol');
  const up = await carol.run(['signup', '--server', service.url, '--nick', name], { env: { SVC_KEY_FILE: key } });
  assert.equal(up.code, 0, up.stderr);
  assert.match(up.stderr, /sealed under SVC_KEY_FILE/);
  const unattended = await carol.run(['devices'], { env: { SVC_KEY_FILE: key, SVC_PASSWORD: '' } });
  assert.equal(unattended.code, 0, unattended.stderr);
  const byPassword = await carol.run(['devices']);
  assert.equal(byPassword.code, 2);
  assert.equal(oneLine(byPassword.stderr), 'svc: this state file is sealed under a key file: set SVC_KEY_FILE');
  const other = join(carol.home, 'other');
  writeFileSync(other, Buffer.alloc(32, 8), { mode: 0o600 });
  const wrong = await carol.run(['devices'], { env: { SVC_KEY_FILE: other } });
  assert.equal(wrong.code, 5);
  assert.equal(oneLine(wrong.stderr), 'svc: SVC_KEY_FILE does not open the state file of svc');
  const open = join(carol.home, 'open');
  writeFileSync(open, Buffer.alloc(32, 7), { mode: 0o644 });
  const loose = await carol.run(['devices'], { env: { SVC_KEY_FILE: open } });
  assert.equal(loose.code, 2);
  assert.match(oneLine(loose.stderr), /readable by others: chmod 600/);
});

test('login on a second machine adds a device of the same account, and both list it', async () => {
  const first = await signedUp(service, 'dora');
  const second = new Machine(first.password);
  machines.push(first, second);
  const r = await second.run(['login', '--server', service.url, '--nick', first.nick]);
  assert.equal(r.code, 0, r.stderr);
  const a = await first.run(['devices', '--json']);
  const b = await second.run(['devices', '--json']);
  const ids = (out: string) =>
    out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; thisDevice: boolean });
  assert.equal(ids(a.stdout).length, 2);
  assert.deepEqual(
    ids(a.stdout)
      .map((d) => d.id)
      .sort(),
    ids(b.stdout)
      .map((d) => d.id)
      .sort(),
  );
  assert.notEqual(ids(a.stdout).find((d) => d.thisDevice)?.id, ids(b.stdout).find((d) => d.thisDevice)?.id);
});

test('a wrong password at login: one line, exit 5, no state file', async () => {
  const erin = await signedUp(service, 'erin');
  const other = new Machine('not the password');
  machines.push(erin, other);
  const r = await other.run(['login', '--server', service.url, '--nick', erin.nick]);
  assert.equal(r.code, 5);
  assert.equal(oneLine(r.stderr), 'svc: wrong nick or password');
  assert.ok(!existsSync(other.statePath));
});

test('an unreachable service: one line naming it, exit 3, no state file; and a signed-in command the same', async () => {
  // A port that was just free: nothing listens there.
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const m = new Machine('whatever password');
  machines.push(m);
  const url = `http://127.0.0.1:${port}`;
  const r = await m.run(['login', '--server', url, '--nick', nick('fred')]);
  assert.equal(r.code, 3);
  assert.equal(oneLine(r.stderr), `svc: cannot reach the service at ${url} (ECONNREFUSED)`);
  assert.ok(!existsSync(m.statePath));
  // A machine signed in to a service that went away.
  const gone = await startService();
  const g = await signedUp(gone, 'gina');
  machines.push(g);
  await gone.stop();
  const send = await g.run(['send', g.nick, 'hello?']);
  assert.equal(send.code, 3);
  assert.equal(oneLine(send.stderr), `svc: cannot reach the service at ${gone.url} (ECONNREFUSED)`);
});

test('a password is never taken as an argument, and a second signup on one machine is refused', async () => {
  const h = await signedUp(service, 'hank');
  machines.push(h);
  const arg = await h.run(['login', '--server', service.url, '--nick', h.nick, '--password', 'x']);
  assert.equal(arg.code, 2);
  assert.match(oneLine(arg.stderr), /never given as an argument/);
  const again = await h.run(['signup', '--server', service.url, '--nick', nick('hank')]);
  assert.equal(again.code, 2);
  assert.match(oneLine(again.stderr), /exists already: run svc logout first/);
  const out = await h.run(['logout']);
  assert.equal(out.code, 0, out.stderr);
  assert.ok(!existsSync(h.statePath));
});
