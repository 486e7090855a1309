/**
 * Files from the composer to the SDK, and what the chat shows while they go: each file is queued
 * with the session's `messages.sendFile` (which refuses one over the service's limit before
 * anything is sent), a photo once re-encoded without its metadata (app/photo.ts), a recording as a
 * voice message, and the upload's progress reaches the bar of its message.
 */
import type { ChatId } from '@svc/sdk';
import { preparePhoto } from '../app/photo.js';
import type { Session } from '../app/session.js';
import type { VoiceRecording } from './recorder.js';

export async function sendFiles(s: Session, chat: ChatId, files: File[], caption: string): Promise<void> {
  const errors: unknown[] = [];
  // One after another, in the order chosen; the caption goes with the first only, so it is read once.
  for (const [i, f] of files.entries()) {
    try {
      const text = i === 0 && caption.trim() ? { caption } : {};
      const photo = await preparePhoto(f);
      if (photo) await s.messages.sendFile(chat, { file: photo.file, name: f.name, mime: photo.mime, photo: photo.photo, ...text });
      else await s.messages.sendFile(chat, { file: f, name: f.name, mime: f.type, ...text });
    } catch (e) {
      errors.push(e);
    }
  }
  if (errors.length > 0) throw errors[0];
}

/** A voice message's file name: "voice-message-<date>-<time>" with its container's extension. */
export function voiceName(mime: string, now = new Date()): string {
  const ext = mime.startsWith('audio/ogg') ? 'ogg' : mime.startsWith('audio/mp4') ? 'm4a' : 'webm';
  return `voice-message-${now.toISOString().slice(0, 19).replace(/[:T]/g, '-')}.${ext}`;
}

/** A recording as a voice message, through the outbox like any file (so it survives offline, reload and 429). */
export async function sendVoice(s: Session, chat: ChatId, r: VoiceRecording): Promise<void> {
  await s.messages.sendFile(chat, { file: r.blob, name: voiceName(r.mime), mime: r.mime, voice: { durationMs: r.durationMs, waveform: r.waveform } });
}

export interface UploadWatch {
  fraction(messageId: string): number;
  watch(messageId: string, bar: HTMLProgressElement): void;
  stop(): void;
}

export function uploadWatch(s: Session): UploadWatch {
  const done = new Map<string, number>();
  const bars = new Map<string, HTMLProgressElement>();
  const off = s.messages.onUploadProgress((mid, got, total) => {
    const f = total > 0 ? got / total : 0;
    done.set(mid, f);
    const bar = bars.get(mid);
    if (bar?.isConnected) bar.value = f;
  });
  return {
    fraction: (mid) => done.get(mid) ?? 0,
    watch: (mid, bar) => void bars.set(mid, bar),
    stop: off,
  };
}

/** Files dropped anywhere on the chat are attached in the composer. */
export function dropTarget(el: HTMLElement, attach: (files: File[]) => void): void {
  el.addEventListener('dragover', (e) => {
    if (!e.dataTransfer?.types.includes('Files')) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = 'copy';
    el.classList.add('dropping');
  });
  el.addEventListener('dragleave', (e) => {
    if (e.target === el) el.classList.remove('dropping');
  });
  el.addEventListener('drop', (e) => {
    el.classList.remove('dropping');
    const files = [...(e.dataTransfer?.files ?? [])];
    if (files.length === 0) return;
    e.preventDefault();
    attach(files);
  });
}
