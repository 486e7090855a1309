/**
 * Visible progress while the password is stretched (Argon2id takes seconds): a progress bar fed by
 * the KDF worker and a status line naming the step.
 */
import type { ProgressStage } from '@svc/sdk';
import { onKdfProgress } from '../app/kdf/hash-wasm-shim.js';
import { h } from './dom.js';

const STAGE_TEXT: Record<ProgressStage, string> = {
  fetching_params: 'Fetching key parameters…',
  deriving_key: 'Deriving keys from the password…',
  contacting_service: 'Contacting the service…',
  opening_identity: 'Opening your identity key…',
  done: 'Done.',
};

export interface ProgressView {
  el: HTMLElement;
  onStage: (stage: ProgressStage) => void;
  start(): void;
  stop(message?: string): void;
}

export function progressView(label: string): ProgressView {
  const bar = h('progress', { max: '100', 'aria-label': label });
  bar.hidden = true;
  const text = h('p', { class: 'status', role: 'status' });
  let off: (() => void) | null = null;
  return {
    el: h('div', {}, bar, text),
    onStage(stage) {
      text.textContent = STAGE_TEXT[stage];
    },
    start() {
      bar.hidden = false;
      bar.removeAttribute('value');
      text.classList.remove('error');
      off?.();
      off = onKdfProgress((f) => (bar.value = Math.round(f * 100)));
    },
    stop(message) {
      off?.();
      off = null;
      bar.hidden = true;
      text.textContent = message ?? '';
      text.classList.toggle('error', Boolean(message));
    },
  };
}
