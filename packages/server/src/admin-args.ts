/** Argument parsing of the admin command, apart from its entry point so it can be tested. */
import { ConfigError } from './config.js';

export const USAGE = `usage: admin invite create [--uses N] [--expires DURATION]
  --uses N            how many registrations the code allows (default 1)
  --expires DURATION  e.g. 30m, 12h, 7d (default: never)`;

/** "90s", "30m", "12h", "7d" → milliseconds. */
export function parseDuration(s: string): number | null {
  const m = /^(\d+)([smhd])$/.exec(s);
  if (!m) return null;
  const unit = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as 's' | 'm' | 'h' | 'd'];
  const n = Number(m[1]) * unit;
  return n > 0 ? n : null;
}

export function parseInviteArgs(args: string[]): { uses: number; expiresInMs: number | null } {
  let uses = 1;
  let expiresInMs: number | null = null;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const v = args[i + 1];
    if (a === '--uses' && v !== undefined && /^\d+$/.test(v) && Number(v) >= 1) {
      uses = Number(v);
      i++;
    } else if (a === '--expires' && v !== undefined && parseDuration(v) !== null) {
      expiresInMs = parseDuration(v);
      i++;
    } else {
      throw new ConfigError(`bad argument ${a ?? ''}\n${USAGE}`);
    }
  }
  return { uses, expiresInMs };
}
