/**
 * Recording a voice message in the composer: "Record voice message" asks for the microphone and
 * records Opus with MediaRecorder (audio/webm;codecs=opus where the browser has it, else
 * audio/ogg;codecs=opus, else whatever the browser records). While it records, the elapsed time
 * (m:ss; a screen reader hears it every half minute, not every second), "Send voice message" and
 * "Cancel recording". Meanwhile an analyser samples the peak level ten times a second for the
 * waveform summary. Cancel discards everything; Send stops and hands over the recording with its
 * duration and waveform. Either way the microphone is released (its tracks stopped). A recording
 * stops by itself, keeping what it has, at the length that still fits the service's file limit.
 * A microphone refused or absent is said in the composer.
 */
import { MAX_RECORDING_MS, maxRecordingMs, peakLevel, voiceDuration, waveformSummary } from '@svc/sdk';
import { h } from './dom.js';

export interface VoiceRecording {
  blob: Blob;
  /** The recording's type as the browser recorded it (e.g. audio/webm;codecs=opus). */
  mime: string;
  durationMs: number;
  /** At most 64 bars 0–255 (the SDK's waveformSummary). */
  waveform: number[];
}

export interface Recorder {
  /** The "Record voice message" button, placed in the composer's row. */
  control: HTMLButtonElement;
  /** What shows instead of the composer's row while recording. */
  panel: HTMLElement;
  /** Why recording cannot start (the microphone refused or absent), empty and hidden otherwise. */
  note: HTMLElement;
  /** Disables the record button (the composer is blocked). */
  disable(on: boolean): void;
  /** Discards a recording in progress and releases the microphone (the chat is closed). */
  stop(): void;
}

export interface RecorderActions {
  /** The largest file the service takes, in bytes. */
  maxFileBytes(): Promise<number>;
  send(r: VoiceRecording): void;
  /** The composer shows the recording panel (true) or its row again (false). */
  onRecording(on: boolean): void;
}

/** In order of preference; the first the browser records is used. */
export const VOICE_TYPES = ['audio/webm;codecs=opus', 'audio/ogg;codecs=opus'];
/** Opus at 32 kbit/s: clear speech, about 240 KB a minute. */
export const VOICE_BITS_PER_SECOND = 32_000;
const LEVEL_EVERY_MS = 100;
const TICK_MS = 250;
const ANNOUNCE_EVERY_S = 30;

interface Active {
  stream: MediaStream;
  rec: MediaRecorder;
  chunks: Blob[];
  bytes: number;
  started: number;
  ended: number | null;
  levels: number[];
  audio: AudioContext | null;
  timers: ReturnType<typeof setInterval>[];
  limitMs: number;
  byteCap: number;
  announced: number;
  /** Settles once the recorder has stopped and handed over its last data. */
  done: Promise<void>;
}

/** What to tell the person when the microphone cannot be had. */
export function microphoneError(e: unknown): string {
  const name = e instanceof DOMException || e instanceof Error ? e.name : '';
  if (name === 'NotAllowedError' || name === 'SecurityError' || name === 'PermissionDeniedError')
    return 'The microphone is blocked for this site. Allow it in the browser’s site settings to record a voice message.';
  if (name === 'NotFoundError' || name === 'OverconstrainedError' || name === 'DevicesNotFoundError')
    return 'No microphone was found. Connect one to record a voice message.';
  if (name === 'NotReadableError' || name === 'AbortError') return 'The microphone could not be started. Another app may be using it.';
  return `The microphone could not be started${e instanceof Error && e.message ? `: ${e.message}` : '.'}`;
}

function pickType(): string {
  return VOICE_TYPES.find((t) => MediaRecorder.isTypeSupported(t)) ?? '';
}

function micIcon(): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', '20');
  svg.setAttribute('height', '20');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  for (const d of ['M12 3a3 3 0 013 3v6a3 3 0 01-6 0V6a3 3 0 013-3z', 'M5 11a7 7 0 0014 0', 'M12 18v3']) {
    const path = document.createElementNS(ns, 'path');
    path.setAttribute('d', d);
    path.setAttribute('fill', 'none');
    path.setAttribute('stroke', 'currentColor');
    path.setAttribute('stroke-width', '2');
    path.setAttribute('stroke-linecap', 'round');
    svg.append(path);
  }
  return svg;
}

export function recorder(a: RecorderActions): Recorder {
  const control = h(
    'button',
    { type: 'button', class: 'record-button', title: 'Record voice message' },
    micIcon(),
    h('span', { class: 'sr-only' }, 'Record voice message'),
  );
  const elapsed = h('span', { class: 'record-time', role: 'timer' }, '0:00');
  const said = h('span', { class: 'sr-only', role: 'status' });
  const hint = h('span', { class: 'hint record-hint', role: 'status' });
  const cancelBtn = h('button', { type: 'button' }, 'Cancel recording');
  const sendBtn = h('button', { type: 'button', class: 'primary' }, 'Send voice message');
  const panel = h(
    'div',
    { class: 'recording', role: 'group', 'aria-label': 'Voice message' },
    h('span', { class: 'record-dot', 'aria-hidden': 'true' }),
    h('span', { class: 'record-label' }, 'Recording'),
    elapsed,
    hint,
    said,
    h('span', { class: 'record-actions' }, cancelBtn, sendBtn),
  );
  panel.hidden = true;
  const note = h('p', { class: 'composer-voice-note error', role: 'status' });
  note.hidden = true;

  let active: Active | null = null;
  let starting = false;
  let blocked = false;

  function say(text: string): void {
    note.textContent = text;
    note.hidden = text === '';
  }

  function show(on: boolean): void {
    panel.hidden = !on;
    a.onRecording(on);
  }

  /** Stops everything that listens: the recorder (its data still arrives), the analyser and the microphone. */
  function release(r: Active): void {
    for (const t of r.timers) clearInterval(t);
    r.timers = [];
    if (r.rec.state !== 'inactive') r.rec.stop();
    for (const t of r.stream.getTracks()) t.stop();
    void r.audio?.close().catch(() => undefined);
    r.audio = null;
  }

  /** Ends the recording but keeps it, for Send or Cancel (the length limit, or the microphone gone). */
  function halt(r: Active, why: string): void {
    if (r.ended !== null) return;
    r.ended = performance.now();
    release(r);
    said.textContent = '';
    hint.textContent = why;
    elapsed.textContent = voiceDuration(Math.floor((r.ended - r.started) / 1000) * 1000);
  }

  function tick(r: Active): void {
    if (r.ended !== null) return;
    const ms = performance.now() - r.started;
    const secs = Math.floor(ms / 1000);
    elapsed.textContent = voiceDuration(secs * 1000);
    if (secs > 0 && secs % ANNOUNCE_EVERY_S === 0 && secs !== r.announced) {
      r.announced = secs;
      said.textContent = `Recording, ${voiceDuration(secs * 1000)}`;
    }
    if (ms >= r.limitMs) halt(r, `Stopped at the longest a voice message can be (${voiceDuration(r.limitMs)}). Send it or cancel.`);
  }

  async function start(): Promise<void> {
    if (active || starting) return;
    say('');
    if (!navigator.mediaDevices?.getUserMedia || typeof MediaRecorder === 'undefined') {
      say('This browser cannot record voice messages.');
      return;
    }
    starting = true;
    control.disabled = true;
    let stream: MediaStream;
    let maxBytes: number;
    try {
      [stream, maxBytes] = await Promise.all([
        navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true } }),
        // Offline the limit is not known yet: the longest recording, and the upload checks the size.
        a.maxFileBytes().catch(() => Number.POSITIVE_INFINITY),
      ]);
    } catch (e) {
      say(microphoneError(e));
      return;
    } finally {
      starting = false;
      control.disabled = blocked;
    }
    const type = pickType();
    let rec: MediaRecorder;
    try {
      rec = new MediaRecorder(stream, { ...(type ? { mimeType: type } : {}), audioBitsPerSecond: VOICE_BITS_PER_SECOND });
    } catch {
      for (const t of stream.getTracks()) t.stop();
      say('This browser cannot record voice messages.');
      return;
    }
    const limitMs = Number.isFinite(maxBytes) ? maxRecordingMs(maxBytes, VOICE_BITS_PER_SECOND) : MAX_RECORDING_MS;
    const r: Active = {
      stream,
      rec,
      chunks: [],
      bytes: 0,
      started: performance.now(),
      ended: null,
      levels: [],
      audio: null,
      timers: [],
      limitMs,
      // The encoder may run over its nominal rate: the data itself is watched too.
      byteCap: maxBytes * 0.95,
      announced: 0,
      done: new Promise((resolve) => {
        rec.addEventListener('stop', () => resolve(), { once: true });
        rec.addEventListener('error', () => resolve(), { once: true });
      }),
    };
    active = r;
    rec.addEventListener('dataavailable', (e) => {
      if (e.data.size === 0) return;
      r.chunks.push(e.data);
      r.bytes += e.data.size;
      if (r.bytes >= r.byteCap) halt(r, `Stopped at the largest file the service takes. Send it or cancel.`);
    });
    for (const t of stream.getAudioTracks()) {
      t.addEventListener('ended', () => halt(r, 'The microphone stopped. Send what was recorded or cancel.'));
    }
    try {
      const audio = new AudioContext();
      // Started after the permission prompt, the context may begin suspended: the analyser would read silence.
      if (audio.state === 'suspended') void audio.resume().catch(() => undefined);
      const analyser = audio.createAnalyser();
      analyser.fftSize = 2048;
      audio.createMediaStreamSource(stream).connect(analyser);
      const buf = new Float32Array(analyser.fftSize);
      r.audio = audio;
      r.timers.push(
        setInterval(() => {
          analyser.getFloatTimeDomainData(buf);
          r.levels.push(peakLevel(buf));
        }, LEVEL_EVERY_MS),
      );
    } catch {
      // No analyser: the message goes without a waveform.
    }
    try {
      rec.start(1_000);
    } catch (e) {
      active = null;
      release(r);
      say(microphoneError(e));
      return;
    }
    r.started = performance.now();
    hint.textContent = '';
    elapsed.textContent = '0:00';
    said.textContent = 'Recording';
    r.timers.push(setInterval(() => tick(r), TICK_MS));
    show(true);
    sendBtn.focus();
  }

  async function send(): Promise<void> {
    const r = active;
    if (!r) return;
    sendBtn.disabled = true;
    cancelBtn.disabled = true;
    r.ended ??= performance.now();
    release(r);
    await r.done;
    active = null;
    sendBtn.disabled = false;
    cancelBtn.disabled = false;
    show(false);
    control.focus();
    if (r.bytes === 0) {
      say('Nothing was recorded.');
      return;
    }
    const mime = r.rec.mimeType || pickType() || r.chunks[0]?.type || 'audio/webm';
    a.send({
      blob: new Blob(r.chunks, { type: mime }),
      mime,
      durationMs: Math.round(r.ended - r.started),
      waveform: waveformSummary(r.levels),
    });
  }

  function cancel(): void {
    const r = active;
    if (!r) return;
    active = null;
    release(r);
    r.chunks = [];
    show(false);
    control.focus();
  }

  control.addEventListener('click', () => void start());
  sendBtn.addEventListener('click', () => void send());
  cancelBtn.addEventListener('click', cancel);
  panel.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      cancel();
    }
  });

  return {
    control,
    panel,
    note,
    disable(on) {
      blocked = on;
      control.disabled = on || starting;
    },
    stop: cancel,
  };
}
