/**
 * A private PostgreSQL server for tests that stop and start it: a fresh cluster (initdb) in a
 * temporary folder, on a free port, that only this test uses. The machine's PostgreSQL is shared
 * with other tests and is never touched. As root, the cluster belongs to the `postgres` user
 * (PostgreSQL refuses to run as root) and its commands run as that user. Not `@svc/testkit/child`:
 * pg_ctl starts the server detached and stops it through its data folder, so there is no child
 * process to wait on or signal.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { userInfo, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@svc/testkit/port';

/** The folder of initdb and pg_ctl: Debian keeps them under /usr/lib/postgresql/<version>/bin, elsewhere they are on PATH. */
function binDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0]) return join(root, versions[0], 'bin');
  }
  return spawnSync('initdb', ['--version']).status === 0 ? '' : null;
}

export class PostgresChild {
  readonly dir = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  private readonly data = join(this.dir, 'data');
  private readonly bin: string;
  private readonly asRoot = userInfo().uid === 0;
  private running = false;
  port = 0;
  /** The server's own log: quoted when it fails to start. */
  readonly log = join(this.dir, 'server.log');

  constructor() {
    const bin = binDir();
    if (bin === null) throw new Error('initdb and pg_ctl were not found (Debian: apt-get install postgresql)');
    this.bin = bin;
    if (this.asRoot) {
      const pg = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
      const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
      if (pg.status !== 0) throw new Error('running as root, and there is no postgres user to own the cluster');
      chownSync(this.dir, Number(pg.stdout.trim()), Number(gid.stdout.trim()));
    }
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  private command(tool: string, args: string[]): [string, string[]] {
    const cmd = join(this.bin, tool);
    return this.asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  }

  /** Runs a tool without blocking: the load of the test goes on while PostgreSQL stops or starts. */
  private run(tool: string, args: string[]): Promise<void> {
    const [cmd, argv] = this.command(tool, args);
    return new Promise((resolve, reject) => {
      const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr.on('data', (d: Buffer) => (out += d.toString()));
      child.on('error', reject);
      child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${tool} ${args.join(' ')} failed (${code}): ${out}`))));
    });
  }

  /** Stops the server at once when the test process exits without calling destroy(). */
  private readonly onExit = (): void => {
    if (!this.running) return;
    const [cmd, argv] = this.command('pg_ctl', ['-D', this.data, '-m', 'immediate', 'stop']);
    spawnSync(cmd, argv);
  };

  /** A new cluster: trust authentication on loopback only, user `postgres`. */
  async init(): Promise<void> {
    await this.run('initdb', ['-D', this.data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync']);
    this.port = await freePort();
  }

  /** Starts the server and waits until it accepts connections. */
  async start(): Promise<void> {
    // The socket goes into the private folder, not the shared /var/run/postgresql.
    const opts = `-p ${this.port} -c listen_addresses=127.0.0.1 -k ${this.dir} -c max_connections=50 -c shared_buffers=32MB`;
    this.running = true;
    process.once('exit', this.onExit);
    try {
      await this.run('pg_ctl', ['-D', this.data, '-l', this.log, '-o', opts, '-w', '-t', '60', 'start']);
    } catch (err) {
      const log = existsSync(this.log) ? readFileSync(this.log, 'utf8').slice(-4000) : '(no log)';
      throw new Error(`${(err as Error).message}\nserver log:\n${log}`, { cause: err });
    }
  }

  /**
   * Stops the server. `immediate` is a crash for the data (no checkpoint; recovery replays the WAL
   * at the next start); `fast` ends every session and shuts down cleanly.
   */
  async stop(mode: 'immediate' | 'fast'): Promise<void> {
    if (!this.running) return;
    await this.run('pg_ctl', ['-D', this.data, '-m', mode, '-w', '-t', '60', 'stop']);
    this.running = false;
    process.off('exit', this.onExit);
  }

  /** Stops the server if it runs and removes its folder. */
  async destroy(): Promise<void> {
    try {
      await this.stop('immediate');
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}
