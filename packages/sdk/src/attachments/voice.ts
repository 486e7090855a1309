/**
 * Voice messages: the pure parts a client needs around its recorder. The waveform summary (the
 * `waveform` of a voice plaintext, at most MAX_WAVEFORM bars of 0–255) comes from the peak levels
 * the client measures while it records; the longest recording that still fits the service's
 * limit; and a duration as people read it ("0:07", "12:05").
 */
import { MAX_WAVEFORM } from '../wire/attachment-plain.js';

/** Below this the loudest bar counts as silence, and every bar is 0 (1/255 of full scale). */
const SILENCE = 1 / 255;

/** The peak of one block of samples (−1…1, as an analyser's time-domain data): 0…1. */
export function peakLevel(samples: ArrayLike<number>): number {
  let peak = 0;
  for (let i = 0; i < samples.length; i++) {
    const v = Math.abs(samples[i]!);
    if (v > peak) peak = v;
  }
  return Math.min(peak, 1);
}

/**
 * The waveform summary of a recording from its peak levels (0…1, in time order, any number):
 * `bars` bars (at most MAX_WAVEFORM, fewer when there are fewer levels), each the loudest level of
 * its stretch of time, scaled so the loudest bar is 255. Silence gives bars of 0; levels outside
 * 0…1 or not numbers count as the nearest bound or 0.
 */
export function waveformSummary(levels: ArrayLike<number>, bars: number = MAX_WAVEFORM): number[] {
  const n = Math.min(Math.max(1, Math.floor(bars)), MAX_WAVEFORM, levels.length);
  if (n === 0 || !Number.isFinite(n)) return [];
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const from = Math.floor((i * levels.length) / n);
    const to = Math.floor(((i + 1) * levels.length) / n);
    let peak = 0;
    for (let j = from; j < to; j++) {
      const v = levels[j]!;
      if (Number.isFinite(v) && v > peak) peak = Math.min(v, 1);
    }
    out.push(peak);
  }
  const top = Math.max(...out);
  return out.map((v) => (top < SILENCE ? 0 : Math.round((255 * v) / top)));
}

/** The longest voice message a client records: half an hour, or less when the file limit is lower. */
export const MAX_RECORDING_MS = 30 * 60_000;

/**
 * How long a recording at `bitsPerSecond` may run so that its file stays under `maxFileBytes`
 * (the largest plaintext the service takes), keeping a tenth for the container and the encoder
 * going over its nominal rate; never more than MAX_RECORDING_MS.
 */
export function maxRecordingMs(maxFileBytes: number, bitsPerSecond: number): number {
  if (!(maxFileBytes > 0) || !(bitsPerSecond > 0)) return 0;
  const ms = Math.floor(((maxFileBytes * 0.9 * 8) / bitsPerSecond) * 1000);
  return Math.min(ms, MAX_RECORDING_MS);
}

/** A duration as "m:ss" ("h:mm:ss" from an hour), to the nearest second. */
export function voiceDuration(ms: number): string {
  const total = Math.max(0, Math.round(Number.isFinite(ms) ? ms / 1000 : 0));
  const s = total % 60;
  const m = Math.floor(total / 60) % 60;
  const h = Math.floor(total / 3600);
  const ss = String(s).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}
