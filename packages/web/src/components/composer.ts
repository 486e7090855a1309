/**
 * The composer: textbox "Message" (Enter sends, Shift+Enter is a new line) and "Send"; above it,
 * while replying, "Replying to <nick>" with "Cancel reply", or while editing, "Editing your
 * message" with "Cancel edit". Past 90 % of what one message can hold after encryption and
 * padding it says how much room is left, and past 100 % it disables Send and says why; the count
 * runs once per frame, so pasting a megabyte does not freeze the page. Files attached (the
 * paperclip, a drop onto the chat, a pasted image) go with the text as their caption; "Record
 * voice message" records one in place of the row (components/recorder.ts). In a room, "@" and
 * letters open the listbox "Mention" of the room's members; the text
 * typed and not sent is kept as the chat's draft. Keyboard: Up in an empty textbox edits one's
 * last message (while it may be edited), Escape cancels a reply or an edit.
 */
import { insertMention, mentionCandidates, mentionQuery, textRoom, type ChatMessage } from '@svc/sdk';
import { attachTray, pastedName } from './attach.js';
import { h, uid } from './dom.js';
import { recorder, type VoiceRecording } from './recorder.js';

export interface Composer {
  el: HTMLElement;
  focus(): void;
  replyTo(m: ChatMessage, who: string): void;
  edit(m: ChatMessage): void;
  /** Disables Send (and with `whole` the textbox too) and says why; null enables it again. */
  block(reason: string | null, whole?: boolean): void;
  /** Attaches files (dropped onto the chat). */
  attach(files: Iterable<File>): void;
  /** Discards a recording in progress and releases the microphone. */
  stop(): void;
  /** Cancels a reply or an edit; false when there was none. */
  cancel(): boolean;
}

export interface ComposerActions {
  send(body: string, replyTo: string | undefined): void;
  saveEdit(m: ChatMessage, body: string): void;
  /** Sends files, the text as the caption of each. */
  sendFiles(files: File[], caption: string): void;
  /** Sends a recorded voice message. */
  sendVoice(r: VoiceRecording): void;
  /** The largest file the service takes, in bytes (a recording stops before it). */
  maxFileBytes(): Promise<number>;
  /** One's last message, when it may still be edited (Up in an empty textbox edits it). */
  editLast?(): ChatMessage | null;
  /** Who "@" may mention here (a room's members but oneself); none in a DM. */
  mentionable?(): string[];
  /** The chat's draft: read once when the chat opens, kept as the text changes. */
  draft?: { load(): Promise<string>; save(text: string): void };
}

export function composerView(a: ComposerActions): Composer {
  const text = h('textarea', { id: 'composer-text', rows: '1', placeholder: 'Write a message', autocomplete: 'off' });
  const sendBtn = h('button', { type: 'submit', class: 'primary' }, 'Send');
  const modeText = h('span', { class: 'mode-text' });
  const cancel = h('button', { type: 'button', class: 'link' });
  const mode = h('div', { class: 'composer-mode' }, modeText, cancel);
  mode.hidden = true;
  const room = h('p', { class: 'composer-room hint', id: 'composer-room', 'aria-live': 'polite' });
  room.hidden = true;
  const note = h('p', { class: 'composer-note hint', role: 'status' });
  note.hidden = true;
  const tray = attachTray(() => measure());
  const row = h('div', { class: 'composer-row' }, tray.control, h('label', { for: 'composer-text', class: 'sr-only' }, 'Message'), text, sendBtn);
  const voice = recorder({
    maxFileBytes: () => a.maxFileBytes(),
    send: (r) => a.sendVoice(r),
    onRecording: (on) => {
      row.hidden = on;
      tray.list.hidden = on || tray.files().length === 0;
    },
  });
  row.insertBefore(voice.control, sendBtn);
  const form = h('form', { class: 'composer', 'aria-label': 'Write a message' }, mode, tray.list, row, voice.panel, voice.note, room);
  text.setAttribute('aria-describedby', 'composer-room');
  const mention = mentionList(text, () => a.mentionable?.() ?? []);
  row.append(mention.el);
  let draftTimer: ReturnType<typeof setTimeout> | null = null;
  /** Keeps the text as the draft, a moment after typing stops (at once with `now`); an edit is no draft. */
  const saveDraft = (now = false) => {
    if (!a.draft || editing) return;
    if (draftTimer) clearTimeout(draftTimer);
    draftTimer = null;
    if (now) a.draft.save(text.value);
    else draftTimer = setTimeout(() => saveDraft(true), 300);
  };
  let draftLoaded = !a.draft;
  void a.draft?.load().then((d) => {
    // Whatever was typed before the draft came back wins.
    if (d && text.value === '' && !editing) {
      text.value = d;
      measure();
    }
    draftLoaded = true;
  });

  let replying: ChatMessage | null = null;
  let editing: ChatMessage | null = null;
  let blocked: string | null = null;
  let tooLong = false;

  function setMode(kind: 'reply' | 'edit' | null, label = ''): void {
    mode.hidden = kind === null;
    modeText.textContent = label;
    cancel.textContent = kind === 'edit' ? 'Cancel edit' : 'Cancel reply';
  }

  function reset(): void {
    replying = null;
    editing = null;
    setMode(null);
  }

  cancel.addEventListener('click', () => {
    if (editing) text.value = '';
    reset();
    measure();
    text.focus();
  });

  function measure(): void {
    const { used, max } = textRoom(text.value, replying?.id);
    const left = max - used;
    tooLong = left < 0;
    room.hidden = used <= max * 0.9;
    room.classList.toggle('error', tooLong);
    room.textContent = tooLong
      ? `Too long to send: shorten it by ${plural(-left, 'character')}.`
      : `${plural(left, 'character')} left in this message.`;
    sendBtn.disabled = tooLong || blocked !== null;
  }

  let scheduled = false;
  text.addEventListener('input', () => {
    mention.update();
    if (draftLoaded) saveDraft();
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      measure();
    });
  });

  function submit(): void {
    measure();
    const body = text.value;
    const files = editing ? [] : tray.files();
    if ((body.trim() === '' && files.length === 0) || sendBtn.disabled) return;
    text.value = '';
    mention.close();
    // Sending a text clears its draft; a file's caption or an edit clears it here.
    if (draftTimer) clearTimeout(draftTimer);
    draftTimer = null;
    if (a.draft && (files.length > 0 || editing)) a.draft.save('');
    if (files.length > 0) {
      tray.clear();
      a.sendFiles(files, body);
    } else if (editing) a.saveEdit(editing, body);
    else a.send(body, replying?.id);
    reset();
    measure();
  }
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    submit();
    text.focus();
  });
  text.addEventListener('paste', (e) => {
    const files = [...(e.clipboardData?.files ?? [])];
    if (files.length === 0 || editing) return;
    e.preventDefault();
    tray.add(files.map((f) => new File([f], pastedName(f), { type: f.type })));
  });
  text.addEventListener('keydown', (e) => {
    if (mention.key(e)) return;
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    } else if (e.key === 'Escape' && (replying || editing)) {
      e.preventDefault();
      cancel.click();
    } else if (e.key === 'ArrowUp' && text.value === '' && !editing && tray.files().length === 0 && !e.shiftKey && !e.altKey) {
      const last = a.editLast?.();
      if (!last) return;
      e.preventDefault();
      startEdit(last);
    }
  });

  function startEdit(m: ChatMessage): void {
    replying = null;
    editing = m;
    setMode('edit', 'Editing your message');
    text.value = m.body ?? '';
    measure();
    text.focus();
    text.setSelectionRange(text.value.length, text.value.length);
  }

  return {
    el: h('div', { class: 'composer-wrap' }, form, note),
    focus: () => text.focus(),
    replyTo(m, who) {
      editing = null;
      replying = m;
      setMode('reply', `Replying to ${who}`);
      measure();
      text.focus();
    },
    edit: startEdit,
    cancel() {
      if (!replying && !editing) return false;
      cancel.click();
      return true;
    },
    attach: (files) => tray.add(files),
    stop: () => {
      voice.stop();
      // Leaving the chat keeps what was typed.
      if (draftTimer) saveDraft(true);
    },
    block(reason, whole = false) {
      blocked = reason;
      voice.disable(reason !== null);
      text.disabled = reason !== null && whole;
      note.hidden = reason === null;
      note.textContent = reason ?? '';
      measure();
    },
  };
}

/**
 * The listbox "Mention" above the composer's textbox: "@" and letters before the caret list the
 * members whose nick starts with them; Up and Down move, Enter, Tab or a click puts "@nick " in,
 * Escape closes. The textbox stays a textbox (a textarea may not take the combobox role, nor
 * aria-expanded): it autocompletes from the list (aria-autocomplete, aria-controls while open), and
 * the option chosen is its aria-activedescendant, so a screen reader reads it as the arrows move.
 */
function mentionList(text: HTMLTextAreaElement, members: () => string[]) {
  const listId = uid('mention');
  const box = h('ul', { id: listId, role: 'listbox', 'aria-label': 'Mention', class: 'mention-list' });
  box.hidden = true;
  text.setAttribute('aria-autocomplete', 'list');
  let open: { start: number; nicks: string[]; active: number } | null = null;

  function render(): void {
    box.replaceChildren();
    box.hidden = open === null;
    if (!open) {
      text.removeAttribute('aria-controls');
      return text.removeAttribute('aria-activedescendant');
    }
    text.setAttribute('aria-controls', listId);
    open.nicks.forEach((nick, i) => {
      const opt = h('li', { id: `${listId}-${i}`, role: 'option', 'aria-selected': String(i === open!.active), class: 'mention-option' }, `@${nick}`);
      opt.setAttribute('aria-label', nick);
      // The textbox keeps focus (and the caret) while the option is clicked.
      opt.addEventListener('mousedown', (e) => e.preventDefault());
      opt.addEventListener('click', () => choose(i));
      box.append(opt);
    });
    text.setAttribute('aria-activedescendant', `${listId}-${open.active}`);
    box.querySelector('[aria-selected="true"]')?.scrollIntoView?.({ block: 'nearest' });
  }

  function close(): void {
    if (!open) return;
    open = null;
    render();
  }

  function update(): void {
    const caret = text.selectionStart ?? text.value.length;
    const q = text.selectionEnd === caret ? mentionQuery(text.value, caret) : null;
    const nicks = q ? mentionCandidates(q.query, members()) : [];
    if (!q || nicks.length === 0) return close();
    const keep = open?.nicks[open.active];
    open = { start: q.start, nicks, active: Math.max(0, keep ? nicks.indexOf(keep) : 0) };
    render();
  }

  function choose(i: number): void {
    if (!open) return;
    const nick = open.nicks[i];
    const caret = text.selectionStart ?? text.value.length;
    if (nick === undefined) return;
    const next = insertMention(text.value, open.start, caret, nick);
    open = null;
    render();
    text.value = next.text;
    text.setSelectionRange(next.caret, next.caret);
    text.focus();
    text.dispatchEvent(new Event('input', { bubbles: true }));
  }

  /** Handles a key while the list is open; true when it was the list's. */
  function key(e: KeyboardEvent): boolean {
    if (!open || e.isComposing) return false;
    const n = open.nicks.length;
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') open.active = (open.active + (e.key === 'ArrowDown' ? 1 : n - 1)) % n;
    else if (e.key === 'Enter' || e.key === 'Tab') {
      if (e.shiftKey) return false;
      choose(open.active);
      e.preventDefault();
      return true;
    } else if (e.key === 'Escape') close();
    else return false;
    e.preventDefault();
    render();
    return true;
  }

  text.addEventListener('click', update);
  text.addEventListener('blur', () => setTimeout(() => document.activeElement !== text && close(), 150));
  return { el: box, update, close, key };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
