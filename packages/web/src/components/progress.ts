/**
 * Visible progress while the password is stretched (Argon2id takes seconds): a progress bar fed by
 * the fraction the SDK reports during `deriving_key` (from the KDF worker) and a status line
 * naming the step.
 */
import type { ProgressStage } from '@svc/sdk';
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
  onStage: (stage: ProgressStage, fraction?: number) => void;
  start(): void;
  stop(message?: string): void;
}

export function progressView(label: string): ProgressView {
  const bar = h('progress', { max: '100', 'aria-label': label });
  bar.hidden = true;
  const text = h('p', { class: 'status', role: 'status' });
  return {
    el: h('div', {}, bar, text),
    onStage(stage, fraction) {
      // The stage repeats with each fraction; rewriting the live region would announce it again.
      if (text.textContent !== STAGE_TEXT[stage]) text.textContent = STAGE_TEXT[stage];
      if (fraction !== undefined) bar.value = Math.round(fraction * 100);
    },
    start() {
      bar.hidden = false;
      bar.removeAttribute('value');
      text.classList.remove('error');
    },
    stop(message) {
      bar.hidden = true;
      text.textContent = message ?? '';
      text.classList.toggle('error', Boolean(message));
    },
  };
}
