/**
 * The first screen: one form for both signing in and creating an account ("Nick", "Password",
 * and "Invite code" when the service asks for one), with progress while the key derivation runs.
 */
import type { Session } from '../app/session.js';
import { signIn, signUp } from '../app/account.js';
import { describeError } from '../app/errors.js';
import { field, h } from './dom.js';
import { progressView } from './progress.js';

export interface AuthOptions {
  registration: 'open' | 'invite';
  notice?: string | null;
  nick?: string | null;
  onSession: (s: Session) => void;
}

export function authView(o: AuthOptions): HTMLElement {
  const nick = field('Nick', { autocomplete: 'username', autocapitalize: 'none', spellcheck: 'false', required: true, value: o.nick ?? '' }, '2 to 32 characters: a–z, 0–9 and _.');
  const password = field('Password', { type: 'password', autocomplete: 'current-password', required: true });
  const invite = o.registration === 'invite' ? field('Invite code', { autocomplete: 'off', spellcheck: 'false' }, 'Needed only to create an account.') : null;
  const signInBtn = h('button', { type: 'submit', class: 'primary', 'data-action': 'signin' }, 'Sign in');
  const signUpBtn = h('button', { type: 'submit', 'data-action': 'signup' }, 'Create account');
  const progress = progressView('Key derivation progress');
  const notice = o.notice ? h('p', { class: 'alert', role: 'status' }, o.notice) : null;

  const form = h(
    'form',
    { class: 'auth-card', 'aria-labelledby': 'auth-title', novalidate: true },
    h('img', { src: '/icon.svg', alt: '', class: 'auth-logo' }),
    h('h1', { id: 'auth-title' }, 'svc messenger'),
    h('p', { class: 'hint' }, 'Private, end-to-end encrypted messages. Your password never leaves this device.'),
    notice,
    nick.wrap,
    password.wrap,
    invite?.wrap ?? null,
    h('div', { class: 'row' }, signInBtn, signUpBtn),
    progress.el,
    h('p', { class: 'footnote' }, 'There is no password reset: the password is the key to your messages. Creating an account makes a new identity key on this device.'),
  );

  const setBusy = (busy: boolean) => {
    for (const el of [signInBtn, signUpBtn, nick.input, password.input, invite?.input]) if (el) el.disabled = busy;
  };

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const submitter = (e as SubmitEvent).submitter as HTMLElement | null;
    const creating = submitter?.dataset.action === 'signup';
    const n = nick.input.value.trim().toLowerCase();
    const p = password.input.value;
    if (!n || !p) {
      progress.stop(!n ? 'Enter your nick.' : 'Enter your password.');
      (!n ? nick.input : password.input).focus();
      return;
    }
    setBusy(true);
    progress.start();
    const code = invite?.input.value.trim();
    const run = creating ? signUp({ nick: n, password: p, ...(code ? { invite: code } : {}) }, progress.onStage) : signIn({ nick: n, password: p }, progress.onStage);
    run.then(
      (s) => {
        progress.stop();
        o.onSession(s);
      },
      (err: unknown) => {
        setBusy(false);
        progress.stop(describeError(err));
        password.input.focus();
      },
    );
  });
  queueMicrotask(() => (o.nick ? password.input : nick.input).focus());
  return h('main', { class: 'auth' }, form);
}
