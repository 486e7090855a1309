/**
 * Dependencies (issue 6, part 6): the lockfile is committed and pins every package that comes
 * from a registry by its sha512 integrity, which `npm ci` checks against each tarball it fetches;
 * no dependency comes from git, a file, a link or a plain URL outside the workspaces; every
 * production dependency is named, with its reason, in the dependency table of docs/DESIGN.md.
 *
 * `npm audit` needs a registry's audit endpoint, which the test machines do not reach: it is run
 * by hand where one answers (docs/SECURITY.md, "Dependencies").
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

const root = process.cwd();

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  link?: boolean;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

function readJson<T>(...path: string[]): T {
  return JSON.parse(readFileSync(join(root, ...path), 'utf8')) as T;
}

const workspaces = readJson<{ workspaces: string[] }>('package.json').workspaces;
const SHA512 = /^sha512-[A-Za-z0-9+/]{86}==$/;
const EXACT_VERSION = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/;
/** A registry tarball: https://<registry>/<name>/-/<file>.tgz. */
const REGISTRY_TARBALL = /^https:\/\/[^/]+\/(@[^/]+\/)?[^/]+\/-\/[^/]+\.tgz$/;
/** Specs that fetch from somewhere other than a registry: git, GitHub shorthands, files, links, URLs, aliases. */
const NOT_A_REGISTRY_SPEC =
  /^(git|git\+|github:|gitlab:|bitbucket:|gist:|file:|link:|portal:|http:|https:|npm:|workspace:)|^[^@/\s]+\/[^/\s]+$|^\.{0,2}\//;

test('the checks below tell registry packages from git, file, link and URL sources', () => {
  for (const spec of [
    'git+https://host/x.git',
    'github:user/repo',
    'user/repo',
    'file:../x',
    '../x',
    'link:../x',
    'https://host/x.tgz',
    'npm:other@1',
    'workspace:*',
  ]) {
    assert.ok(NOT_A_REGISTRY_SPEC.test(spec), spec);
  }
  for (const spec of ['^1.2.3', '~9.2.0', '1.0.0', '>=2 <3', '*', '1.x', 'latest']) assert.ok(!NOT_A_REGISTRY_SPEC.test(spec), spec);
  assert.ok(REGISTRY_TARBALL.test('https://registry.example/@scope/name/-/name-1.0.0.tgz'));
  for (const url of ['git+ssh://git@host/x.git', 'file:x-1.0.0.tgz', 'http://registry.example/x/-/x-1.0.0.tgz', 'https://host/x/archive/main.tar.gz'])
    assert.ok(!REGISTRY_TARBALL.test(url), url);
  assert.ok(!SHA512.test('sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk='));
});

test('every package in package-lock.json that comes from a registry is pinned: an exact version and an sha512 integrity', () => {
  const lock = readJson<{ lockfileVersion: number; packages: Record<string, LockEntry> }>('package-lock.json');
  assert.ok(lock.lockfileVersion >= 2, 'a lockfile with the packages map');
  const bad: string[] = [];
  let pinned = 0;
  for (const [path, e] of Object.entries(lock.packages)) {
    if (path === '' || workspaces.includes(path)) continue; // the root and the workspaces themselves
    if (e.link) {
      // A workspace, linked into node_modules: the only links allowed.
      if (!workspaces.includes(e.resolved ?? '')) bad.push(`${path}: a link to ${e.resolved}, not a workspace`);
      continue;
    }
    if (!path.includes('node_modules/')) bad.push(`${path}: a package outside node_modules and the workspaces`);
    if (!EXACT_VERSION.test(e.version ?? '')) bad.push(`${path}: version ${e.version}`);
    if (!SHA512.test(e.integrity ?? '')) bad.push(`${path}: integrity ${e.integrity ?? 'missing'}, not sha512`);
    // npm leaves `resolved` out for the configured registry (omit-lockfile-registry-resolved);
    // when it is there, it must be a registry's tarball, not git, a file or another URL.
    if (e.resolved !== undefined && !REGISTRY_TARBALL.test(e.resolved)) bad.push(`${path}: resolved from ${e.resolved}`);
    pinned++;
  }
  assert.deepEqual(bad, []);
  assert.ok(pinned > 50, `the lockfile pins the installed tree (${pinned} packages)`);
});

test('no dependency of the root or of a workspace is fetched from git, a file, a link or a URL', () => {
  const bad: string[] = [];
  const names = new Map<string, string>();
  for (const w of workspaces) {
    const j = readJson<{ name: string; version: string }>(w, 'package.json');
    names.set(j.name, j.version);
  }
  for (const dir of ['.', ...workspaces]) {
    const j = readJson<LockEntry>(dir, 'package.json');
    for (const field of ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'] as const) {
      for (const [name, spec] of Object.entries(j[field] ?? {})) {
        // A workspace is named by its exact version, which npm resolves to the workspace itself.
        if (names.has(name)) {
          if (spec !== names.get(name)) bad.push(`${dir} ${field} ${name}: ${spec}, not the workspace's version ${names.get(name)}`);
        } else if (NOT_A_REGISTRY_SPEC.test(spec)) bad.push(`${dir} ${field} ${name}: ${spec}`);
      }
    }
  }
  assert.deepEqual(bad, []);
});

test('the lockfile is committed', () => {
  assert.ok(existsSync(join(root, 'package-lock.json')), 'package-lock.json exists');
  const git = spawnSync('git', ['ls-files', '--error-unmatch', 'package-lock.json'], { cwd: root, encoding: 'utf8' });
  if (git.error) return; // no git here (an unpacked release): existence is what can be checked
  assert.equal(git.status, 0, 'package-lock.json is tracked by git');
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { lockfileVersion: number };
  assert.ok(lock.lockfileVersion >= 2);
});

test('every production dependency of every package is named and justified in docs/DESIGN.md', () => {
  const design = readFileSync(join(root, 'docs', 'DESIGN.md'), 'utf8');
  const table = design.slice(design.indexOf('## Dependencies'));
  const rows = new Map<string, string>();
  for (const line of table.split('\n')) {
    const m = /^\| `([^`]+)`[^|]*\| (.+) \|$/.exec(line);
    if (m) rows.set(m[1]!, m[2]!);
  }
  const deps = new Set<string>();
  for (const pkg of readdirSync(join(root, 'packages'))) {
    const file = join(root, 'packages', pkg, 'package.json');
    if (!existsSync(file)) continue;
    const j = JSON.parse(readFileSync(file, 'utf8')) as { dependencies?: Record<string, string> };
    for (const name of Object.keys(j.dependencies ?? {})) if (!name.startsWith('@svc/')) deps.add(name);
  }
  assert.ok(deps.size > 0);
  for (const d of deps) assert.ok((rows.get(d) ?? '').length > 10, `docs/DESIGN.md's dependency table explains ${d}`);
  // What npm would install for production: the direct dependencies above and what they pull in.
  const tree = spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['ls', '--omit=dev', '--all', '--parseable'], {
    cwd: root,
    encoding: 'utf8',
  }).stdout;
  assert.ok(tree.split('\n').filter(Boolean).length < 400, 'the production tree stays small');
});
