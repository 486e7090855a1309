/**
 * The real built server as a child process (`@svc/testkit/child`), on a free loopback port and a
 * fresh SQLite file, the way an operator runs it. The browser talks to it over its one ORIGIN
 * (127.0.0.1, never localhost, or the origin check refuses the app's requests).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, SERVICE_MAIN, startChildOnFreePort, type ChildService } from '@svc/testkit/child';

/** The repository root. */
export const repoRoot = REPO_ROOT;

export interface RunningServer {
  origin: string;
  dir: string;
  dbPath: string;
  /** 'running (pid N)', or how the process ended: a failing step says it, since a killed server logs nothing. */
  state(): string;
  /** Everything the server wrote to stdout and stderr so far (LOG_LEVEL=warn keeps it short). */
  output(): string;
  /** Log lines at level error or above written since the last call (a 500's cause, a crash). */
  takeErrors(): string[];
  /** The warnings logged since the last call (a request answered before routing, …): context for a failure, not one. */
  takeWarnings(): string[];
  stop(): Promise<void>;
}

export interface ServerOptions {
  /**
   * Keep the service's own default message limit (30 per nick per minute) instead of raising it,
   * for the scenarios about how the client spends that budget.
   */
  defaultMessageLimit?: boolean;
  /** Other settings of the service, over the harness's own. */
  env?: Record<string, string>;
}

/**
 * Every browser context comes from 127.0.0.1, so the per-IP and per-nick limits are raised far
 * above what the scenarios need; the limits themselves are the server suite's business. A file
 * that checks how the client lives with a limit passes `defaultMessageLimit`, or any setting in `env`.
 */
export async function startServer(o: ServerOptions = {}): Promise<RunningServer> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-web-test-'));
  const dbPath = join(dir, 'svc.db');
  let started: ChildService;
  try {
    started = await startChildOnFreePort((port) => ({
      args: ['--enable-source-maps', SERVICE_MAIN],
      env: {
        PORT: String(port),
        HOST: '127.0.0.1',
        ORIGIN: `http://127.0.0.1:${port}`,
        DATABASE_URL: `sqlite:${dbPath}`,
        ...(o.defaultMessageLimit ? {} : { LIMIT_MESSAGES_PER_MIN: '100000' }),
        LIMIT_WRITES_PER_MIN: '100000',
        LIMIT_REGISTER_PER_HOUR: '100000',
        LIMIT_LOGIN_PER_10MIN: '100000',
        LIMIT_LOGIN_PER_IP_PER_10MIN: '100000',
        LIMIT_LOGIN_PER_NICK_PER_10MIN: '100000',
        LOG_LEVEL: 'warn',
        ...o.env,
      },
    }));
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const origin = started.url;
  const output = () => started.output();
  let seen = 0;
  const logged = { errors: [] as string[], warnings: [] as string[] };
  const levelOf = (l: string): number => {
    try {
      return (JSON.parse(l) as { level?: number }).level ?? 0;
    } catch {
      return 60; // not a log line: a crash or a stack trace
    }
  };
  /** Sorts the lines written since the last look into errors and warnings, and hands over one kind. */
  const take = (kind: keyof typeof logged): string[] => {
    const out = output();
    const end = out.lastIndexOf('\n') + 1;
    for (const l of out.slice(seen, end).split('\n')) {
      if (!l.trim()) continue;
      const level = levelOf(l);
      if (level >= 50) logged.errors.push(l);
      else if (level === 40) logged.warnings.push(l);
    }
    seen = end;
    const lines = logged[kind];
    logged[kind] = [];
    return lines;
  };
  const takeErrors = () => take('errors');
  const takeWarnings = () => take('warnings');
  const stop = async () => {
    await started.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  return { origin, dir, dbPath, state: () => started.state, output, takeErrors, takeWarnings, stop };
}
