/** Command-line options of `npm run bench -- …`, with the sizes of a full and of a quick run. */

export interface Options {
  backend: 'sqlite' | 'postgres';
  quick: boolean;
  /** Repetitions of every workload; the tables show medians. */
  runs: number;
  workloads: Set<Workload>;
  profile: boolean;
  /** Sample the first service process and the ceiling with Linux perf and show each phase by layer (perf-layers.ts). */
  perf: boolean;
  /** Sender/recipient pairs of the DM workload. */
  pairs: number;
  /** Length of each measured send phase, in ms. */
  durationMs: number;
  /** Rooms of the fan-out workload, and senders per room. */
  rooms: number;
  roomSize: number;
  roomSenders: number;
  idleStreams: number;
  replayCount: number;
  /** Envelopes stored for a device without a stream, timed (the "offline" figure). */
  offlineCount: number;
  /** Service processes on one PostgreSQL schema and Redis prefix. */
  instances: number;
  /** The fixed rate of the first paced DM run (messages per second). */
  pacedRate: number;
  /** Devices (open streams) of each DM recipient: the deliveries of one DM. */
  recipientDevices: number;
  /** DM recipients acknowledge what they receive in batches of this many ids (0: they do not ack). */
  ackBatch: number;
  /** Print, for each phase, when its slowest deliveries were sent (`Tails` in stats.ts). */
  tails: boolean;
}

export const WORKLOADS = ['idle', 'dm', 'rooms', 'replay'] as const;
export type Workload = (typeof WORKLOADS)[number];

export const USAGE = `npm run bench -- [options]
  --backend sqlite|postgres   store of the service (default sqlite; postgres adds Redis)
  --quick                     small counts and short phases, to try the harness (figures not representative)
  --runs N                    repetitions of each workload (default 3, quick 1)
  --only a,b                  workloads to run: ${WORKLOADS.join(', ')} (default all)
  --duration S                seconds of each measured send phase (default 4, quick 1.5)
  --pairs N                   DM sender/recipient pairs (default 200, quick 50)
  --rooms N                   rooms of 50 members in the fan-out workload (default 4, quick 1)
  --streams N                 idle event streams (default 10000, quick 1000)
  --replay N                  envelopes queued for the replay workload (default 10000, quick 2000)
  --offline N                 envelopes stored for an offline device, timed, in the replay workload (default 5000, quick 1000)
  --instances N               service processes on one PostgreSQL schema and Redis prefix (default 1; --backend postgres only)
  --rate N                    the fixed rate of the first paced DM phase, messages/s (default 2000)
  --devices N                 devices (event streams) of each DM recipient (default 1, as a person with one device; 2 doubles the ceiling's SSE writes)
  --ack N                     DM recipients acknowledge in batches of N ids while the phases run (default 0: no acks)
  --tails                     print for each phase when its deliveries at or above the p99 were sent, per 100 ms
  --profile                   start the service with --cpu-prof into bench/runs/profiles and list its top functions
  --perf                      sample the service's and the ceiling's threads with Linux perf (kernel included) and show,
                              for each DM and rooms phase and the offline fill, the main thread's CPU per message by layer (needs perf)
  --help`;

function int(v: string | undefined, name: string, min: number, max: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be a whole number from ${min} to ${max}`);
  return n;
}

export function parseOptions(argv: string[]): Options | 'help' {
  const quick = argv.includes('--quick');
  const o: Options = {
    backend: 'sqlite',
    quick,
    runs: quick ? 1 : 3,
    workloads: new Set(WORKLOADS),
    profile: false,
    perf: false,
    pairs: quick ? 50 : 200,
    durationMs: quick ? 1500 : 4000,
    rooms: quick ? 1 : 4,
    roomSize: 50,
    roomSenders: 5,
    idleStreams: quick ? 1000 : 10_000,
    replayCount: quick ? 2000 : 10_000,
    offlineCount: quick ? 1000 : 5000,
    instances: 1,
    pacedRate: 2000,
    ackBatch: 0,
    tails: false,
    recipientDevices: 1,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = () => argv[++i];
    if (a === '--help' || a === '-h') return 'help';
    else if (a === '--quick') continue;
    else if (a === '--profile') o.profile = true;
    else if (a === '--tails') o.tails = true;
    else if (a === '--perf') o.perf = true;
    else if (a === '--backend') {
      const b = v();
      if (b !== 'sqlite' && b !== 'postgres') throw new Error('--backend must be sqlite or postgres');
      o.backend = b;
    } else if (a === '--runs') o.runs = int(v(), '--runs', 1, 20);
    else if (a === '--duration') o.durationMs = Math.round(Number(v()) * 1000);
    else if (a === '--pairs') o.pairs = int(v(), '--pairs', 1, 2000);
    else if (a === '--rooms') o.rooms = int(v(), '--rooms', 1, 20);
    else if (a === '--streams') o.idleStreams = int(v(), '--streams', 1, 16_000);
    else if (a === '--replay') o.replayCount = int(v(), '--replay', 1, 10_000);
    else if (a === '--offline') o.offlineCount = int(v(), '--offline', 1, 10_000);
    else if (a === '--instances') o.instances = int(v(), '--instances', 1, 16);
    else if (a === '--ack') o.ackBatch = int(v(), '--ack', 0, 500);
    else if (a === '--rate') o.pacedRate = int(v(), '--rate', 1, 100_000);
    else if (a === '--devices') o.recipientDevices = int(v(), '--devices', 1, 10);
    else if (a === '--only') {
      const list = (v() ?? '').split(',').filter(Boolean);
      for (const w of list) if (!(WORKLOADS as readonly string[]).includes(w)) throw new Error(`--only: unknown workload ${w}`);
      o.workloads = new Set(list as Workload[]);
    } else throw new Error(`unknown option ${a}\n${USAGE}`);
  }
  if (o.instances > 1 && o.backend !== 'postgres')
    throw new Error('--instances needs --backend postgres: a SQLite file is served by exactly one service process (docs/DEPLOY.md)');
  // Only the first process is recorded, while the messages of every instance would be counted.
  if (o.perf && o.instances > 1) throw new Error('--perf records one service process: use it with --instances 1');
  if (!(o.durationMs >= 200 && o.durationMs <= 60_000)) throw new Error('--duration must be from 0.2 to 60 seconds');
  return o;
}
