/** Command-line options of `npm run bench:attachments -- …`. */
import { UPLOAD_IN_FLIGHT } from '@svc/sdk';

export interface AttachmentOptions {
  backend: 'sqlite' | 'postgres';
  /** Repetitions of each measurement; the table shows medians. */
  runs: number;
  /** Plaintext sizes of the files whose upload and download are timed, in MB (10^6 bytes). */
  sizesMb: number[];
  /** How many parts an upload keeps in flight: each count is timed. */
  inFlight: number[];
  /** The photo sent to the room, in MB, and the room's size (its sender included). */
  photoMb: number;
  members: number;
  /** Parts in flight of the photo's upload: the SDK's count. */
  photoInFlight: number;
  /** Write the service's V8 CPU profile to bench/runs/profiles/ and print where its time went. */
  profile: boolean;
}

export const attachmentUsage = `npm run bench:attachments -- [options]
  --backend sqlite|postgres   store of the service (default sqlite; postgres adds Redis)
  --runs N                    repetitions of each measurement (default 5; --quick 1)
  --quick                     one run of each, to try the harness
  --sizes a,b                 file sizes in MB whose upload and download are timed (default 1,25; at most 25)
  --inflight a,b              parts an upload keeps in flight, each timed (default 1,${UPLOAD_IN_FLIGHT}: one
                              at a time, and the SDK's count)
  --photo MB                  the photo sent to the room (default 5)
  --members N                 members of the room, the sender included (default 20)
  --profile                   the service's CPU profile to bench/runs/profiles/, its top functions printed
  --help`;

function int(v: string | undefined, name: string, min: number, max: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be a whole number from ${min} to ${max}`);
  return n;
}

const list = (v: string | undefined, name: string, min: number, max: number) => (v ?? '').split(',').map((x) => int(x, name, min, max));

export function parseAttachmentOptions(argv: string[]): AttachmentOptions | 'help' {
  const o: AttachmentOptions = {
    backend: 'sqlite',
    runs: 5,
    sizesMb: [1, 25],
    inFlight: [1, UPLOAD_IN_FLIGHT],
    photoMb: 5,
    members: 20,
    photoInFlight: UPLOAD_IN_FLIGHT,
    profile: false,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = () => argv[++i];
    if (a === '--help' || a === '-h') return 'help';
    else if (a === '--quick') o.runs = 1;
    else if (a === '--backend') {
      const b = v();
      if (b !== 'sqlite' && b !== 'postgres') throw new Error('--backend must be sqlite or postgres');
      o.backend = b;
    } else if (a === '--runs') o.runs = int(v(), '--runs', 1, 50);
    else if (a === '--sizes') o.sizesMb = list(v(), '--sizes', 1, 25);
    else if (a === '--inflight') o.inFlight = list(v(), '--inflight', 1, 64);
    else if (a === '--photo') o.photoMb = int(v(), '--photo', 1, 25);
    else if (a === '--profile') o.profile = true;
    else if (a === '--members') o.members = int(v(), '--members', 2, 256);
    else throw new Error(`unknown option ${a}\n${attachmentUsage}`);
  }
  return o;
}
