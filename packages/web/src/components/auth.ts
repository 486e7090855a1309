/**
 * The first screen: one form for both signing in and creating an account ("Nick", "Password",
 * "Confirm password", and "Invite code" when the service asks for one), with progress while the
 * key derivation runs.
 *
 * "Create account" checks before anything is sent: the confirmation must repeat the password, and
 * the password must pass the rule in app/strength.ts (the meter shows how it stands while typing).
 * A password cannot be reset, so a typo or a guessable one would lock the person out or in
 * someone else's reach for good. "Sign in" ignores the confirmation and the meter.
 */
import type { Session } from '../app/session.js';
import { signIn, signUp } from '../app/account.js';
import { describeError } from '../app/errors.js';
import { seenKdf } from '../app/device.js';
import { isSdkError } from '@svc/sdk';
import { MIN_LENGTH, rate, shownScore, stopRating, verdict, weakness, type Strength } from '../app/strength.js';
import { field, h, uid } from './dom.js';
import { progressView } from './progress.js';

export interface AuthOptions {
  registration: 'open' | 'invite';
  notice?: string | null;
  nick?: string | null;
  onSession: (s: Session) => void;
}

const RULE = `To create an account, use ${MIN_LENGTH} or more characters that are hard to guess, such as a few unrelated words.`;

/**
 * The strength meter under the password: a <meter> named "Password strength" and a text verdict.
 * Its space is kept from the start (the meter is only invisible until there is a password to
 * rate), so nothing below it moves when the first rating arrives, under a pointer about to click.
 */
function strengthView(password: HTMLInputElement, related: () => string[]) {
  const verdictId = uid('strength');
  const meter = h('meter', {
    class: 'idle',
    min: '0',
    max: '4',
    low: '2',
    high: '3',
    optimum: '4',
    value: '0',
    'aria-label': 'Password strength',
    'aria-describedby': verdictId,
  });
  const text = h('p', { class: 'hint', id: verdictId }, RULE);
  const el = h('div', { class: 'strength' }, meter, text);
  let latest = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const show = (p: string, s: Strength) => {
    latest += 1; // an older rating still on its way must not overwrite this one
    meter.classList.remove('idle');
    meter.value = shownScore(p, s);
    text.textContent = verdict(p, s);
  };
  const update = () => {
    const p = password.value;
    const mine = ++latest;
    if (!p) {
      meter.classList.add('idle');
      text.textContent = RULE;
      return;
    }
    rate(p, related()).then(
      (s) => mine === latest && show(p, s),
      () => undefined, // "Create account" says so if the check is still missing then
    );
  };
  // Rated after a pause in typing (each rating takes a moment, in a worker).
  password.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(update, 150);
  });
  return { el, show };
}

export function authView(o: AuthOptions): HTMLElement {
  const nick = field(
    'Nick',
    { autocomplete: 'username', autocapitalize: 'none', spellcheck: 'false', required: true, value: o.nick ?? '' },
    '2 to 32 characters: a–z, 0–9 and _.',
  );
  const password = field('Password', { type: 'password', autocomplete: 'current-password', required: true });
  const confirm = field(
    'Confirm password',
    { type: 'password', autocomplete: 'new-password' },
    'Needed only to create an account: type the password again.',
  );
  const invite =
    o.registration === 'invite' ? field('Invite code', { autocomplete: 'off', spellcheck: 'false' }, 'Needed only to create an account.') : null;
  const show = h('button', { type: 'button', class: 'reveal', 'aria-pressed': 'false' }, 'Show password');
  const showRow = h('div', { class: 'with-button' });
  password.input.replaceWith(showRow);
  showRow.append(password.input, show);
  show.addEventListener('click', () => {
    const visible = show.getAttribute('aria-pressed') !== 'true';
    show.setAttribute('aria-pressed', String(visible));
    for (const input of [password.input, confirm.input]) input.type = visible ? 'text' : 'password';
  });
  const strength = strengthView(password.input, () => [nick.input.value.trim().toLowerCase()]);
  const signInBtn = h('button', { type: 'submit', class: 'primary', 'data-action': 'signin' }, 'Sign in');
  const signUpBtn = h('button', { type: 'submit', 'data-action': 'signup' }, 'Create account');
  const progress = progressView('Key derivation progress');
  const refusal = h('p', { class: 'error', role: 'alert' });
  const notice = o.notice ? h('p', { class: 'alert', role: 'status' }, o.notice) : null;
  const weakKdf = weakKdfWarning();

  const form = h(
    'form',
    { class: 'auth-card', 'aria-labelledby': 'auth-title', novalidate: true },
    h('img', { src: '/icon.svg', alt: '', class: 'auth-logo' }),
    h('h1', { id: 'auth-title' }, 'svc messenger'),
    h('p', { class: 'hint' }, 'Private, end-to-end encrypted messages. Your password never leaves this device.'),
    notice,
    nick.wrap,
    password.wrap,
    strength.el,
    confirm.wrap,
    invite?.wrap ?? null,
    h(
      'p',
      { class: 'no-reset' },
      h('strong', {}, 'Your password cannot be reset.'),
      ' It unlocks the keys to your messages, and nobody else has it, not even this service. If you forget it, the account and its messages are lost.',
    ),
    h('div', { class: 'row' }, signInBtn, signUpBtn),
    refusal,
    weakKdf.el,
    progress.el,
    h('p', { class: 'footnote' }, 'Creating an account makes a new identity key on this device.'),
  );

  const inputs = [nick.input, password.input, confirm.input, invite?.input];
  const setBusy = (busy: boolean) => {
    for (const el of [signInBtn, signUpBtn, show, ...inputs]) if (el) el.disabled = busy;
  };
  const refuse = (message: string, focus: HTMLInputElement) => {
    refusal.textContent = message;
    focus.setAttribute('aria-invalid', 'true');
    focus.focus();
  };

  /** Why a new account with these inputs is refused, or null; the estimator loads if need be. */
  async function signUpRefusal(n: string, p: string): Promise<[string, HTMLInputElement] | null> {
    if (confirm.input.value !== p) return ['The passwords do not match.', confirm.input];
    let s: Strength;
    try {
      s = await rate(p, [n]);
    } catch {
      return ['The password check could not be loaded. Check the connection and try again.', password.input];
    }
    strength.show(p, s);
    const why = weakness(p, s);
    return why ? [why, password.input] : null;
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const submitter = e.submitter;
    const creating = submitter?.dataset.action === 'signup';
    const n = nick.input.value.trim().toLowerCase();
    const p = password.input.value;
    refusal.textContent = '';
    weakKdf.hide();
    for (const el of inputs) el?.removeAttribute('aria-invalid');
    progress.stop();
    if (!n || !p) return refuse(!n ? 'Enter your nick.' : 'Enter your password.', !n ? nick.input : password.input);
    setBusy(true);
    const checked = creating ? signUpRefusal(n, p) : Promise.resolve(null);
    void checked.then((refused) => {
      if (refused) {
        setBusy(false);
        return refuse(...refused);
      }
      progress.start();
      const code = invite?.input.value.trim();
      const attempt = (acceptWeakKdf: boolean): void => {
        const run = creating
          ? signUp({ nick: n, password: p, ...(code ? { invite: code } : {}) }, progress.onStage)
          : signIn({ nick: n, password: p, acceptWeakKdf }, progress.onStage);
        run.then(
          (s) => {
            progress.stop();
            stopRating();
            o.onSession(s);
          },
          async (err: unknown) => {
            setBusy(false);
            progress.stop(describeError(err));
            // Weaker parameters than new accounts get, on a browser that never saw this account:
            // the person may go on after the warning (a browser that saw stronger ones refuses).
            if (isSdkError(err, 'kdf_weak') && !(await seenKdf(n)))
              weakKdf.show(() => {
                setBusy(true);
                progress.start();
                attempt(true);
              });
            else password.input.focus();
          },
        );
      };
      attempt(false);
    });
  });
  queueMicrotask(() => (o.nick ? password.input : nick.input).focus());
  return h('main', { class: 'auth' }, form);
}

/**
 * The warning of a sign-in whose key-derivation parameters are weaker than new accounts get, on a
 * browser that never saw the account: it says what it may mean, and "Sign in anyway" goes on.
 */
function weakKdfWarning(): { el: HTMLElement; show(go: () => void): void; hide(): void } {
  const go = h('button', { type: 'button', class: 'danger' }, 'Sign in anyway');
  const el = h(
    'div',
    { class: 'alert', role: 'alert' },
    h(
      'p',
      {},
      h('strong', {}, 'Weaker protection than expected. '),
      'The service asks this browser to derive your keys with less work than new accounts use. If your account was made that way on purpose (by an operator or a test), go on. Otherwise someone may be trying to make your password easier to guess: do not sign in here, and ask the operator.',
    ),
    go,
  );
  el.hidden = true;
  let next: (() => void) | null = null;
  go.addEventListener('click', () => {
    el.hidden = true;
    next?.();
  });
  return {
    el,
    show(f) {
      next = f;
      el.hidden = false;
      go.focus();
    },
    hide() {
      el.hidden = true;
    },
  };
}
