/**
 * A voice message inside its message: an `audio` element with the browser's controls, named
 * "Voice message" (keyboard, mouse and touch all work on native controls), its duration as text
 * (m:ss) and its waveform drawn beside it (decorative, hidden from screen readers). The recording
 * plays from a /media/ URL the service worker answers with the decrypted bytes this page holds
 * (app/media.ts): the CSP allows no blob: or data: media.
 */
import { isSdkError, voiceDuration, type ChatMessage } from '@svc/sdk';
import { describeError } from '../app/errors.js';
import { h } from './dom.js';
import { GONE_TEXT, type FileContext } from './fileview.js';

type Ref = NonNullable<ChatMessage['attachment']>;

const SVG = 'http://www.w3.org/2000/svg';
const BAR = 3;
const GAP = 1;
const HEIGHT = 28;

/** The waveform as bars in an SVG, each at least a line high so silence still reads as a recording. */
export function waveformDrawing(waveform: readonly number[]): SVGSVGElement {
  const bars = waveform.length > 0 ? waveform : new Array<number>(32).fill(0);
  const svg = document.createElementNS(SVG, 'svg');
  const width = bars.length * (BAR + GAP);
  svg.setAttribute('viewBox', `0 0 ${width} ${HEIGHT}`);
  svg.setAttribute('width', String(width));
  svg.setAttribute('height', String(HEIGHT));
  svg.setAttribute('class', 'waveform');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  bars.forEach((v, i) => {
    const hgt = Math.max(2, Math.round((v / 255) * HEIGHT));
    const r = document.createElementNS(SVG, 'rect');
    r.setAttribute('x', String(i * (BAR + GAP)));
    r.setAttribute('y', String((HEIGHT - hgt) / 2));
    r.setAttribute('width', String(BAR));
    r.setAttribute('height', String(hgt));
    r.setAttribute('rx', '1');
    svg.append(r);
  });
  return svg;
}

export function voiceView(c: FileContext, m: ChatMessage, ref: Ref): HTMLElement {
  const audio = h('audio', { controls: true, preload: 'metadata', 'aria-label': 'Voice message', class: 'voice-audio' });
  const duration = h('span', { class: 'voice-duration' }, voiceDuration(ref.durationMs ?? 0));
  const status = h('span', { class: 'hint file-status', 'aria-live': 'polite' });
  const box = h('div', { class: 'file voice' }, h('div', { class: 'voice-row' }, waveformDrawing(ref.waveform ?? []), duration), audio, status);
  if (c.uploaded(m.id) !== null) {
    const up = h('progress', { max: '1', value: String(c.uploaded(m.id) ?? 0), 'aria-label': `Uploading ${ref.name}` });
    c.watchUpload(m.id, up);
    box.append(up);
    return box;
  }
  // A recording made by MediaRecorder names no duration in its header: the element finds it by
  // looking at the end once, so its controls show the length and can seek.
  audio.addEventListener('loadedmetadata', () => {
    if (audio.duration !== Infinity) return;
    const back = () => {
      if (audio.duration === Infinity) return;
      audio.removeEventListener('durationchange', back);
      audio.currentTime = 0;
    };
    audio.addEventListener('durationchange', back);
    audio.currentTime = 1e9;
  });
  c.mediaUrl(m, audio)
    .then((url) => (audio.src = url))
    .catch((e: unknown) => (status.textContent = isSdkError(e, 'unknown_attachment') ? GONE_TEXT : describeError(e)));
  return box;
}
