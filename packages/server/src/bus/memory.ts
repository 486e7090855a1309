/** The one-process bus: events go straight to this process's streams. */
import type { Bus, CloseSelector, Delivery } from './types.js';
import type { LocalStreams, StreamConn } from './streams.js';

export class MemoryBus implements Bus {
  constructor(private readonly local: LocalStreams) {}

  async attach(conn: StreamConn): Promise<void> {
    this.local.add(conn);
  }

  detach(conn: StreamConn): void {
    this.local.remove(conn);
  }

  async deliver(deliveries: Delivery[]): Promise<void> {
    this.local.deliver(deliveries);
  }

  async closeStreams(sel: CloseSelector): Promise<void> {
    this.local.closeWhere(sel);
  }

  async onlineDevices(deviceIds: string[]): Promise<Set<string>> {
    return new Set(deviceIds.filter((id) => this.local.has(id)));
  }

  async close(): Promise<void> {}
}
