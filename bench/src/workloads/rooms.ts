/**
 * Room fan-out: rooms of `roomSize` members with two devices each, every device holding an open
 * event stream. A few members of each room send in a closed loop from their first device; each
 * message goes to every other device of the room (2 × roomSize − 1 deliveries). With several
 * service instances, the senders and the streams are dealt round the instances in turn.
 */
import { roomBody } from '../fixtures.js';
import { pool } from '../http.js';
import type { Options } from '../options.js';
import { EventStream } from '../sse.js';
import type { Target } from '../targets.js';
import { closedLoop, type Sender } from './load.js';
import { measurePhase, progress, type PhaseResult } from './phase.js';

const DEVICES_PER_MEMBER = 2;

export class RoomsWorkload {
  private constructor(
    private readonly t: Target,
    private readonly senders: Sender[],
    private readonly streams: EventStream[],
    private readonly fanout: number,
  ) {}

  static async setup(t: Target, o: Options, tag: string): Promise<RoomsWorkload> {
    const n = t.children.length;
    const senders: Sender[] = [];
    const streams: EventStream[] = [];
    for (let r = 0; r < o.rooms; r++) {
      const members = await t.createAccounts(`${tag}${r}`, o.roomSize, DEVICES_PER_MEMBER);
      const room = await t.createRoom(members);
      for (const m of members.slice(0, o.roomSenders))
        senders.push({ cookie: m.cookie, device: m.devices[0]!, instance: senders.length % n, next: () => roomBody(room.id, room.keyId) });
      const devices = members.flatMap((a) => a.devices.map((d) => ({ a, d })));
      await pool(devices, 50, async ({ a, d }, i) => {
        const s = await EventStream.open(t.port(i), d, a.cookie);
        await s.waitReady(60_000);
        streams.push(s);
      });
    }
    return new RoomsWorkload(t, senders, streams, o.roomSize * DEVICES_PER_MEMBER - 1);
  }

  async run(o: Options): Promise<PhaseResult> {
    const apis = this.t.apis;
    this.t.sizeFor(this.senders);
    const maxCount = 1_000_000;
    await measurePhase(this.t, this.streams, this.fanout, (rec) =>
      closedLoop(apis, this.senders, rec, { durationMs: Math.min(1000, o.durationMs), maxCount }),
    );
    const r = await measurePhase(this.t, this.streams, this.fanout, (rec) =>
      closedLoop(apis, this.senders, rec, { durationMs: o.durationMs, maxCount }),
    );
    progress(this.t, 'rooms', r);
    return r;
  }

  close(): void {
    for (const s of this.streams) s.close();
  }
}
