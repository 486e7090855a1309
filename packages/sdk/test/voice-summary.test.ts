/**
 * Voice messages (attachments/voice.ts): the waveform summary a voice plaintext carries is at most
 * 64 bars of 0–255 whatever the recording's length, keeps where the loud parts are, and passes the
 * receiver's check; the longest recording fits the service's file limit; durations read as m:ss.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  cipherSize,
  decodePlaintext,
  encodePlaintext,
  MAX_RECORDING_MS,
  maxPlainSize,
  maxRecordingMs,
  peakLevel,
  voiceDuration,
  waveformSummary,
} from '../src/index.js';

test('the peak of a block of samples is its largest magnitude, at most 1', () => {
  assert.equal(peakLevel(new Float32Array([0.1, -0.5, 0.25])), 0.5);
  assert.equal(peakLevel([0, 0, 0]), 0);
  assert.equal(peakLevel([]), 0);
  assert.equal(peakLevel([1.7, -0.2]), 1);
});

test('a long recording is summed up in 64 bars, the loudest 255, each the peak of its stretch', () => {
  // Ten minutes of levels every 100 ms, silent but for one loud second near the end.
  const levels = new Array<number>(6000).fill(0.02);
  for (let i = 5000; i < 5010; i++) levels[i] = 0.8;
  const w = waveformSummary(levels);
  assert.equal(w.length, 64);
  assert.ok(w.every((v) => Number.isInteger(v) && v >= 0 && v <= 255));
  assert.equal(Math.max(...w), 255);
  assert.equal(w.indexOf(255), Math.floor((5000 * 64) / 6000), 'the loud bar is where the loud second was');
  assert.equal(w[0], Math.round((255 * 0.02) / 0.8));
});

test('fewer levels than bars give one bar each; a count of bars is honoured and capped at 64', () => {
  assert.deepEqual(waveformSummary([0.5, 0.25, 1]), [128, 64, 255]);
  assert.equal(waveformSummary(new Array(500).fill(0.3), 16).length, 16);
  assert.equal(waveformSummary(new Array(500).fill(0.3), 1000).length, 64);
  assert.deepEqual(waveformSummary([]), []);
});

test('silence gives bars of 0, and levels that are not numbers or out of range do no harm', () => {
  assert.deepEqual(waveformSummary([0, 0, 0, 0]), [0, 0, 0, 0]);
  assert.deepEqual(waveformSummary([Number.NaN, -1, 2, 0.5]), [0, 0, 255, 128]);
});

test('a summary goes into a voice message and comes out unchanged', () => {
  const waveform = waveformSummary(Array.from({ length: 300 }, (_, i) => Math.abs(Math.sin(i / 10))));
  const plain = {
    type: 'voice',
    id: 'A'.repeat(22),
    key: 'K'.repeat(43),
    sha256: 'H'.repeat(43),
    size: cipherSize(48_000),
    plainSize: 48_000,
    name: 'voice-message.webm',
    mime: 'audio/webm',
    durationMs: 12_300,
    waveform,
    sentAt: 1_800_000_000_000,
    mid: 'M'.repeat(22),
  } as const;
  const back = decodePlaintext(encodePlaintext(plain));
  assert.equal(back.type, 'voice');
  assert.deepEqual((back as { waveform: number[] }).waveform, waveform);
});

test('the longest recording fits the file limit at the recording bit rate, and never exceeds half an hour', () => {
  const bitrate = 32_000;
  const small = maxPlainSize(1_000_000);
  const ms = maxRecordingMs(small, bitrate);
  assert.ok(ms > 0 && ms < MAX_RECORDING_MS);
  assert.ok(((ms / 1000) * bitrate) / 8 <= small * 0.9 + 1, 'the recording at its nominal rate leaves a tenth of the limit');
  assert.equal(maxRecordingMs(maxPlainSize(25 * 2 ** 20), bitrate), MAX_RECORDING_MS);
  assert.equal(maxRecordingMs(0, bitrate), 0);
  assert.equal(maxRecordingMs(small, 0), 0);
});

test('a duration reads as m:ss, rounded to the second, and h:mm:ss from an hour', () => {
  assert.equal(voiceDuration(0), '0:00');
  assert.equal(voiceDuration(4_400), '0:04');
  assert.equal(voiceDuration(4_600), '0:05');
  assert.equal(voiceDuration(65_000), '1:05');
  assert.equal(voiceDuration(12 * 60_000 + 5_000), '12:05');
  assert.equal(voiceDuration(3600_000 + 2 * 60_000 + 3_000), '1:02:03');
  assert.equal(voiceDuration(-5), '0:00');
  assert.equal(voiceDuration(Number.NaN), '0:00');
});
