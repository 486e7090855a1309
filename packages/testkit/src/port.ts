import { readdir, readFile, readlink } from 'node:fs/promises';
import { createServer } from 'node:net';

/**
 * A loopback port free right now: listen on port 0, read the port, close. For a child process
 * that must be told its port in advance (the service, nginx, a private PostgreSQL or Redis).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Whether process `pid` holds a socket listening on `port`, from Linux's /proc (true
 * where there is no /proc to ask). A port handed out by freePort can be taken by another process
 * before the child binds it; the child then exits with EADDRINUSE, but until it does, a readiness
 * probe on that port is answered by the other process's server.
 */
export async function listensOn(pid: number, port: number): Promise<boolean> {
  // Every listening socket on the port, on any address (IPv4 and IPv6 tables), by inode.
  const tables = await Promise.all(['/proc/net/tcp', '/proc/net/tcp6'].map((f) => readFile(f, 'utf8').catch(() => null)));
  if (tables.every((t) => t === null)) return true;
  const suffix = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const LISTEN = '0A';
  const inodes = new Set<string>();
  for (const table of tables) {
    for (const line of (table ?? '').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[1]?.endsWith(suffix) && f[3] === LISTEN && f[9] !== undefined) inodes.add(f[9]);
    }
  }
  if (inodes.size === 0) return false;
  let fds: string[];
  try {
    fds = await readdir(`/proc/${pid}/fd`);
  } catch {
    return false; // gone already
  }
  for (const fd of fds) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m && inodes.has(m[1]!)) return true;
  }
  return false;
}
