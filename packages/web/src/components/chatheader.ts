/**
 * The chat header's own controls and the pinned messages under it:
 * - "Mute": a menu button (items "Mute for 1 hour", "Mute for 8 hours", "Mute always"); while the
 *   chat is muted the button reads "Unmute" and one click unmutes. The account's other devices
 *   follow (the SDK sends the change to them).
 * - "Disappearing messages": a modal dialog of radio buttons ("Off", "30 seconds" … "4 weeks")
 *   and "Save"; the change is a line in the log of every member.
 * - "Pinned messages": a region listing the chat's pinned messages (sender and text as they stand
 *   now); choosing one scrolls the log to it and focuses it.
 */
import { MUTE_CHOICES, TIMER_CHOICES, type ChatId, type ChatMessage } from '@svc/sdk';
import type { Session } from '../app/session.js';
import { openActionMenu } from './actionmenu.js';
import { clear, h, uid } from './dom.js';

export interface HeaderControl {
  el: HTMLElement;
  destroy(): void;
}

/** "Mute" / "Unmute" for `chat`; `fail` shows what went wrong. */
export function muteButton(s: Session, chat: ChatId, fail: (e: unknown) => void): HeaderControl {
  const button = h('button', { type: 'button', class: 'mute' });
  const el = h('span', { class: 'menu-anchor' }, button);
  const render = () => {
    const muted = s.isMuted(chat);
    button.textContent = muted ? 'Unmute' : 'Mute';
    if (muted) {
      button.removeAttribute('aria-haspopup');
      button.removeAttribute('aria-expanded');
    } else if (!button.hasAttribute('aria-haspopup')) {
      button.setAttribute('aria-haspopup', 'menu');
      button.setAttribute('aria-expanded', 'false');
    }
  };
  button.addEventListener('click', () => {
    if (s.isMuted(chat)) {
      void s
        .setMute(chat, 0)
        .then(() => button.focus())
        .catch(fail);
      return;
    }
    openActionMenu(
      button,
      MUTE_CHOICES.map((c) => ({
        label: c.label,
        run: () =>
          void s
            .setMute(chat, c.ms === 'always' ? 'always' : s.now() + c.ms)
            .then(() => button.focus())
            .catch(fail),
      })),
      'Mute',
    );
  });
  render();
  const offs = [s.on('mute', render), s.on('chats', render)];
  return {
    el,
    destroy: () => {
      for (const off of offs) off();
    },
  };
}

/** "Disappearing messages": opens the dialog of timer choices; "Save" sets the chat's timer for every member. */
export function timerButton(s: Session, chat: ChatId, fail: (e: unknown) => void): HeaderControl {
  const button = h('button', { type: 'button', 'aria-haspopup': 'dialog', class: 'timer-button' }, 'Disappearing messages');
  button.addEventListener('click', () => {
    void s.messages
      .timer(chat)
      .then((t) => timerDialog(button, t.seconds))
      .then((seconds) => (seconds === null ? null : s.messages.setTimer(chat, seconds)))
      .catch(fail);
  });
  return { el: button, destroy: () => undefined };
}

/** The dialog; resolves the chosen seconds on "Save", null on "Cancel" or Escape. Focus goes back to `opener`. */
function timerDialog(opener: HTMLElement, current: number): Promise<number | null> {
  const titleId = uid('dlg-title');
  const hintId = uid('dlg-hint');
  const name = uid('timer');
  const radios = TIMER_CHOICES.map((c) => {
    const input = h('input', { type: 'radio', name, value: String(c.seconds), checked: c.seconds === current });
    return { input, label: h('label', { class: 'choice' }, input, ` ${c.label}`) };
  });
  const cancel = h('button', { type: 'button' }, 'Cancel');
  const save = h('button', { type: 'submit', class: 'primary' }, 'Save');
  const form = h(
    'form',
    { method: 'dialog' },
    h('fieldset', { class: 'choices' }, h('legend', { class: 'sr-only' }, 'Messages disappear after'), ...radios.map((r) => r.label)),
    h('div', { class: 'row actions' }, cancel, save),
  );
  const dialog = h(
    'dialog',
    { class: 'confirm timer-dialog', 'aria-labelledby': titleId, 'aria-describedby': hintId },
    h('h2', { id: titleId }, 'Disappearing messages'),
    h(
      'p',
      { id: hintId, class: 'hint' },
      'New messages in this chat disappear for everyone after this time, counted from when each person first sees them.',
    ),
    form,
  );
  document.body.append(dialog);
  return new Promise((resolve) => {
    let chosen: number | null = null;
    cancel.addEventListener('click', () => dialog.close());
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const picked = radios.find((r) => r.input.checked);
      chosen = picked ? Number(picked.input.value) : null;
      dialog.close();
    });
    dialog.addEventListener('close', () => {
      dialog.remove();
      if (opener.isConnected) opener.focus();
      resolve(chosen);
    });
    dialog.showModal();
    (radios.find((r) => r.input.checked)?.input ?? radios[0]!.input).focus();
  });
}

/** The words of a countdown, coarse enough to change seldom: "29 seconds", "5 minutes", "3 hours", "2 days". */
export function remainingWords(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const unit = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;
  if (s < 60) return unit(s, 'second');
  if (s < 3600) return unit(Math.ceil(s / 60), 'minute');
  if (s < 86_400) return unit(Math.ceil(s / 3600), 'hour');
  return unit(Math.ceil(s / 86_400), 'day');
}

/** The region "Pinned messages" of `chat`; `reveal` scrolls the log to a message and focuses it. */
export function pinnedView(s: Session, chat: ChatId, reveal: (id: string) => void): HeaderControl & { refresh(): void } {
  const list = h('ul', { class: 'pinned-list' });
  const el = h('section', { class: 'pinned', 'aria-label': 'Pinned messages' }, list);
  el.hidden = true;
  let seq = 0;
  const line = (m: ChatMessage): string => {
    const what =
      m.body || (m.attachment ? (m.attachment.type === 'photo' ? 'Photo' : m.attachment.type === 'voice' ? 'Voice message' : m.attachment.name) : '');
    return what.replace(/\s+/g, ' ').slice(0, 160);
  };
  async function refresh(): Promise<void> {
    const mine = ++seq;
    const pins = await s.messages.pinned(chat);
    if (mine !== seq) return;
    const focused = (document.activeElement as HTMLElement | null)?.dataset?.pin;
    clear(list);
    for (const m of pins) {
      const who = m.from === s.nick ? 'You' : m.from;
      const b = h(
        'button',
        { type: 'button', class: 'pinned-item', 'data-pin': m.id },
        h('span', { class: 'pinned-from' }, who),
        h('span', { class: 'pinned-text' }, line(m)),
      );
      b.addEventListener('click', () => reveal(m.id));
      list.append(h('li', {}, b));
    }
    el.hidden = pins.length === 0;
    if (focused) list.querySelector<HTMLElement>(`[data-pin="${CSS.escape(focused)}"]`)?.focus();
  }
  const off = s.on('change', (c) => {
    const touched = [...c.changed, ...(c.added ? [c.added] : []), ...(c.imported ?? [])].some((m) => m.chat === chat);
    if (touched || c.removed?.length) void refresh().catch(() => undefined);
  });
  void refresh().catch(() => undefined);
  return { el, refresh: () => void refresh().catch(() => undefined), destroy: off };
}
