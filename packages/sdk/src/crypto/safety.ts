/**
 * Safety number: 60 digits in 12 groups of 5, the same on both sides, to compare out of band.
 * For each party: SHA-512("svc/safety/v1|<nick>|" || 65-byte public key), first 30 bytes, read as six
 * 5-byte big-endian numbers, each mod 100000 → six 5-digit groups. The two halves are ordered by
 * nick, so each person can also find their own 30 digits in the other's number.
 */
import { buf, concat, subtle, unb64, utf8 } from '../bytes.js';

async function half(nick: string, publicKey: string): Promise<string[]> {
  const h = new Uint8Array(await subtle().digest('SHA-512', buf(concat(utf8(`svc/safety/v1|${nick}|`), unb64(publicKey, 65)))));
  const groups: string[] = [];
  for (let g = 0; g < 6; g++) {
    let n = 0;
    for (let i = 0; i < 5; i++) n = n * 256 + h[g * 5 + i]!;
    groups.push(String(n % 100000).padStart(5, '0'));
  }
  return groups;
}

/** "12345 67890 …" (12 groups). Throws TypeError for a public key that is not 65 bytes of b64url. */
export async function safetyNumber(nickA: string, pubA: string, nickB: string, pubB: string): Promise<string> {
  const [first, second] =
    nickA <= nickB
      ? [
          [nickA, pubA],
          [nickB, pubB],
        ]
      : [
          [nickB, pubB],
          [nickA, pubA],
        ];
  const a = await half(first[0]!, first[1]!);
  const b = await half(second[0]!, second[1]!);
  return [...a, ...b].join(' ');
}

/** What a scanned code says of a safety number: the same, another one, or not a safety number at all. */
export type ScanVerdict = 'match' | 'mismatch' | 'not-a-safety-number';

/**
 * Compares the text of a scanned QR code with the safety number shown here. The code holds the 60
 * digits (the panel encodes them without spaces); spaces, line breaks and a scanner's stray
 * whitespace are ignored, anything else that is not exactly 60 digits is no safety number.
 */
export function compareScannedSafetyNumber(scanned: string, shown: string): ScanVerdict {
  const digits = scanned.replace(/\s+/g, '');
  if (!/^\d{60}$/.test(digits)) return 'not-a-safety-number';
  return digits === shown.replace(/\s+/g, '') ? 'match' : 'mismatch';
}
