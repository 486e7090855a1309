/**
 * A TCP proxy between the service and PostgreSQL (or Redis) that a test can cut and restore.
 * Cutting destroys every open connection and stops listening, so new connections are refused: to
 * the service this is PostgreSQL going away (a crash, a restart, a failover, a network cut),
 * without stopping the machine's PostgreSQL that other tests use. Freezing keeps connections open
 * but forwards nothing: a database that hangs or a network that drops packets. Holding delays
 * the client's bytes that match, and what follows them on that connection: one slow command.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private frozen = false;
  private held: { match: (chunk: Buffer) => boolean; ms: number } | null = null;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  /** Listens on a free port the first time, on the same port after a cut. */
  async start(): Promise<void> {
    const server = createServer((client) => this.pipe(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  private pipe(client: Socket): void {
    const upstream = connect(this.targetPort, this.targetHost);
    this.sockets.add(client);
    this.sockets.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    // Client bytes go out in order; a held chunk delays itself and everything behind it.
    let outbound = Promise.resolve();
    client.on('data', (d: Buffer) => {
      if (this.frozen) return;
      const hold = this.held?.match(d) ? this.held.ms : 0;
      outbound = outbound.then(async () => {
        if (hold > 0) await new Promise((r) => setTimeout(r, hold));
        if (!upstream.destroyed) upstream.write(d);
      });
    });
    upstream.on('data', (d) => {
      if (!this.frozen) client.write(d);
    });
  }

  /**
   * PostgreSQL goes away: open connections are closed and new ones refused. With `reset`, each
   * connection ends with a TCP RST, as when the server process dies or a firewall drops the
   * session: the service's client then reads ECONNRESET instead of an end of stream.
   */
  async cut(opts: { reset?: boolean } = {}): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) {
      if (opts.reset && !s.destroyed) s.resetAndDestroy();
      else s.destroy();
    }
    this.sockets.clear();
    if (server) await new Promise((r) => server.close(r));
  }

  /** PostgreSQL is back. Connections that lived through a freeze lost bytes, so they are reset as a real network would. */
  async restore(): Promise<void> {
    if (this.frozen) {
      for (const s of this.sockets) s.destroy();
      this.sockets.clear();
      this.frozen = false;
    }
    if (!this.server) await this.start();
  }

  /** PostgreSQL hangs: connections stay open, nothing goes through either way. */
  freeze(): void {
    this.frozen = true;
  }

  /** From now on, a chunk the client sends that `match`es reaches the server `ms` later. */
  hold(match: (chunk: Buffer) => boolean, ms: number): void {
    this.held = { match, ms };
  }

  async close(): Promise<void> {
    await this.cut();
  }
}
