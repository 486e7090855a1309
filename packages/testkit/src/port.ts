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
