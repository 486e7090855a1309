/**
 * Safety numbers in a DM: the panel that shows the 60 digits with a QR code of them and lets the
 * user mark the contact as verified, and the alert shown when a peer's key changed.
 * The number is made from the key the session names for comparing (the pending new key while a
 * change waits, else the pin), so "Mark as verified" is bound to the very key the digits came from.
 */
import { toDataURL } from 'qrcode';
import { describeError } from '../app/errors.js';
import type { Session } from '../app/session.js';
import { clear, h } from './dom.js';
import { scanSafetyCode } from './scancode.js';

/**
 * A QR code of the digits as a PNG data: URL (the CSP allows `img-src data:`). Digits only, so
 * the code uses the numeric mode and stays small; a scanner shows the same 60 digits.
 */
function qrImage(digits: string): HTMLImageElement {
  const img = h('img', { class: 'qr', alt: 'QR code of the safety number', width: 180, height: 180 });
  toDataURL(digits.replace(/\s+/g, ''), { errorCorrectionLevel: 'M', margin: 2, scale: 6 }).then(
    (url) => (img.src = url),
    () => (img.hidden = true),
  );
  return img;
}

/** The "Safety number" panel of a DM. It re-renders itself on trust changes while it is on screen. */
export function safetyPanel(s: Session, peer: string): HTMLElement {
  const body = h('div', { class: 'safety-body' }, h('p', { class: 'safety' }, 'Computing…'));
  const state = h('p', { class: 'safety-state', role: 'status' });
  // What the last scan said, for the key it was compared with (a new key needs a new scan).
  const scanResult = h('p', { class: 'scan-result', role: 'status' });
  const actions = h('div', { class: 'row' });
  const problem = h('p', { class: 'status error', role: 'status' });
  const el = h(
    'section',
    { class: 'panel', 'aria-label': 'Safety number' },
    h('h3', {}, `Safety number with ${peer}`),
    body,
    scanResult,
    state,
    actions,
    problem,
    h(
      'p',
      { class: 'hint' },
      `Compare these digits with ${peer} in person or over another channel, or scan each other’s code with "Scan code". If they match, nobody is in the middle.`,
    ),
  );

  let shown: { key: string; digits: string } | undefined;
  let scanned: { key: string; verdict: 'match' | 'mismatch' } | undefined;
  let busy = false;

  const act = (work: () => Promise<void>) => {
    if (busy) return;
    busy = true;
    problem.textContent = '';
    work()
      .catch((e: unknown) => (problem.textContent = describeError(e)))
      .finally(() => {
        busy = false;
        renderState();
      });
  };

  const scanButton = (): HTMLButtonElement => {
    const scan = h('button', { type: 'button', disabled: !shown }, 'Scan code');
    scan.addEventListener('click', () => {
      const at = shown;
      if (!at) return;
      problem.textContent = '';
      void scanSafetyCode(at.digits, (text) => (problem.textContent = text), scan).then((verdict) => {
        if (verdict === null || shown?.key !== at.key) return;
        scanned = { key: at.key, verdict };
        renderState();
      });
    });
    return scan;
  };

  function renderScan(): void {
    scanResult.classList.toggle('error', scanned?.verdict === 'mismatch');
    if (!scanned || scanned.key !== shown?.key) {
      scanResult.textContent = '';
      return;
    }
    scanResult.textContent =
      scanned.verdict === 'match'
        ? 'Safety numbers match'
        : `Safety numbers do not match. The code you scanned is not the one of this chat with ${peer}: someone may be in the middle. Do not mark ${peer} as verified; compare again in person.`;
  }

  function renderState(): void {
    const st = s.keys.status(peer);
    clear(actions);
    renderScan();
    if (st.changed) {
      state.textContent = `The key of ${peer} changed${st.wasVerified ? ' since you verified it' : ''}. These digits are for the new key: compare them, then accept the new key above.`;
      actions.append(scanButton());
      return;
    }
    if (st.verified) {
      state.textContent = `You have verified ${peer}.`;
      actions.append(h('button', { type: 'button', onclick: () => act(() => s.keys.unverify(peer)) }, 'Mark as not verified'), scanButton());
      return;
    }
    state.textContent = st.wasVerified ? `Not verified: you verified an earlier key of ${peer}, not this one.` : `Not verified yet.`;
    const verify = h('button', { type: 'button', class: 'primary', disabled: !shown }, 'Mark as verified');
    verify.addEventListener('click', () =>
      act(async () => {
        if (shown) await s.keys.verify(peer, shown.key);
      }),
    );
    actions.append(verify, scanButton());
  }

  function render(): void {
    s.keys
      .keyToCompare(peer)
      .then(async (key) => {
        if (shown?.key !== key) {
          const digits = await s.keys.safetyNumber(peer, key);
          shown = { key, digits };
          clear(body);
          body.append(qrImage(digits), h('p', { class: 'safety' }, digits));
        }
        renderState();
      })
      .catch((e: unknown) => {
        clear(body);
        body.append(h('p', { class: 'safety' }, describeError(e)));
      });
  }

  const off = s.on('trust', () => {
    // The conversation drops the panel by clearing its slot; let go of the session then.
    if (!el.isConnected) off();
    else render();
  });
  renderState();
  render();
  return el;
}

/**
 * The warning for a peer whose key changed: sending to them is held until "Accept new key".
 * When the contact was verified, it says so: that makes a change far more suspicious.
 */
export function keyChangeAlert(s: Session, nick: string, showSafety: (() => void) | null, accepted: () => void): HTMLElement {
  const accept = h('button', { type: 'button', class: 'primary' }, 'Accept new key');
  accept.addEventListener('click', () => {
    accept.disabled = true;
    s.keys.accept(nick).then(
      () => accepted(),
      (e: unknown) => {
        accept.disabled = false;
        s.reportProblem(describeError(e));
      },
    );
  });
  const show = showSafety ? h('button', { type: 'button', onclick: showSafety }, 'Show safety number') : null;
  const wasVerified = s.keys.status(nick).wasVerified;
  return h(
    'div',
    { class: 'alert', role: 'alert' },
    h(
      'p',
      {},
      h('strong', {}, `The key of ${nick} has changed. `),
      wasVerified ? h('strong', {}, `You had verified ${nick}’s safety number before. `) : null,
      `An account keeps its key for life, so this may mean that the service, or someone who controls it, is trying to read your messages. Sending to ${nick} is held until you accept the new key. Compare the safety number with ${nick} in person or over another channel first.`,
    ),
    h('div', { class: 'row' }, accept, show),
  );
}
