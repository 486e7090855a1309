/**
 * Node scripts run to their end in a child process that does not block the test's event loop, so
 * that a server in this process or a writer loop keeps running while they work: the admin
 * command, and the service when it refuses to start. A service that runs is started with
 * `@svc/testkit/child`.
 */
import { spawn } from 'node:child_process';

export const ADMIN = 'packages/server/dist/src/admin.js';

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node args` to its end (unlike spawnSync, without blocking this process). Its environment
 * is only what the test gives, plus PATH: variables of the caller's shell (REDIS_URL,
 * REGISTRATION…) must not leak into it.
 */
export function runNode(args: string[], env: Record<string, string>, timeoutMs = 20_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => {
      process.kill(child.pid!, 'SIGKILL');
      reject(new Error(`${args.join(' ')} ran over ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

/** The admin command, as `npm run admin -- …` runs it. */
export const admin = (args: string[], env: Record<string, string>): Promise<Run> => runNode([ADMIN, ...args], env);
