/**
 * The open chat: header, key-change warning and a room's membership warning (role alert), room
 * settings or safety number, the message log (components/messagelog.ts) and the composer
 * (components/composer.ts). Records come from the session (`messages`); a change
 * re-renders only the rows it touched, and one's own messages waiting in the outbox count down
 * every second.
 */
import { waitMessage, type ChatId, type ChatMessage } from '@svc/sdk';
import { describeError } from '../app/errors.js';
import { go, splitChat } from '../app/route.js';
import type { Session } from '../app/session.js';
import { closePopups, openActionMenu, openEmojiPicker, type MenuItem } from './actionmenu.js';
import { muteButton, pinnedView, remainingWords, timerButton } from './chatheader.js';
import { composerView } from './composer.js';
import { dropTarget, sendFiles, sendVoice, uploadWatch } from './sendfiles.js';
import { mediaReady, mediaUrl } from '../app/media.js';
import { clear, h } from './dom.js';
import { membershipAlert } from './membershipalert.js';
import { messageLog, PAGE } from './messagelog.js';
import { roomSettings } from './roomsettings.js';
import { keyChangeAlert, safetyPanel } from './safety.js';

/** Said in place of a voice message when the page has no service worker to play it from. */
const NO_PLAYER = 'This voice message cannot play until the app has finished starting. Reload the page to play it.';

/** Whether a countdown's words are worth changing now: seconds only at each ten (a timer is read out when asked, not as it runs). */
function tens(left: string): boolean {
  const m = /^(\d+) seconds?$/.exec(left);
  return !m || Number(m[1]) % 10 === 0;
}

export interface ConversationView {
  el: HTMLElement;
  /** Scrolls to a message (a search result). */
  reveal(id: string): void;
  destroy(): void;
}

export function conversationView(s: Session, chat: ChatId): ConversationView {
  const { kind, id } = splitChat(chat);
  const title = h('h2', { id: 'conv-title' });
  const back = h('a', { href: '#/', class: 'back' }, '← Chats');
  const panelSlot = h('div');
  const alertSlot = h('div');
  const memberSlot = h('div');
  /** The membership warning on screen, replaced only when its text changes (an alert is announced when it appears). */
  let memberText = '';
  const problem = h('p', { class: 'status error', role: 'status' });
  let panel: 'none' | 'settings' | 'safety' = 'none';
  const panelBtn = h('button', { type: 'button', 'aria-expanded': 'false' }, kind === 'room' ? 'Room settings' : 'Safety number');
  panelBtn.addEventListener('click', () => {
    panel = panel === 'none' ? (kind === 'room' ? 'settings' : 'safety') : 'none';
    renderPanel();
  });
  const dropBtn = h('button', { type: 'button', class: 'danger' }, 'Delete chat');
  dropBtn.hidden = true;
  dropBtn.addEventListener('click', () => {
    void s.deleteChat(chat).then(() => go({ name: 'home' }));
  });
  const fail = (e: unknown) => (problem.textContent = describeError(e));
  const mute = muteButton(s, chat, fail);
  const timer = timerButton(s, chat, fail);
  const head = h('div', { class: 'conv-head' }, back, title, mute.el, timer.el, panelBtn, dropBtn);
  const pins = pinnedView(s, chat, (mid) => void focusMessage(mid));
  const composer = composerView({
    send: (body, replyTo) => {
      problem.textContent = '';
      s.messages
        .sendText(chat, body, replyTo)
        .then(() => s.setDraft(chat, ''))
        .catch(fail);
    },
    saveEdit: (m, body) => void s.messages.edit(m, body).catch(fail),
    sendFiles: (files, caption) => {
      problem.textContent = '';
      void sendFiles(s, chat, files, caption).catch(fail);
    },
    sendVoice: (r) => {
      problem.textContent = '';
      void sendVoice(s, chat, r).catch(fail);
    },
    maxFileBytes: () => s.messages.maxFileBytes(),
    editLast: () => {
      const last = [...log.records()].reverse().find((m) => m.from === s.nick && m.kind === 'text' && !m.deleted);
      return last && s.messages.canEdit(last) ? last : null;
    },
    mentionable: () => s.messages.mentionable(chat),
    draft: { load: () => s.draft(chat), save: (text) => void s.setDraft(chat, text).catch(fail) },
  });
  const uploads = uploadWatch(s);

  /** Own records in the outbox, whose status counts down. */
  const waiting = new Set<string>();
  const log = messageLog({
    chat,
    label: 'Messages',
    empty: kind === 'room' ? 'No messages yet. Say hello to the room.' : `No messages yet. Say hello to ${id}.`,
    load: (before, limit = PAGE) => s.messages.page(chat, { limit, ...(before ? { before } : {}) }),
    // A reply's quote comes from this chat only; an id of another chat reads as not loaded.
    fetch: (mid) => s.messages.quoted(chat, mid),
    item: {
      me: s.nick,
      mentionsMe: (m) => s.messages.mentionsMe(m),
      status: (m) => {
        if (m.state === 'queued' || m.state === 'sending') {
          waiting.add(m.id);
          const ms = s.messages.waitMs(m.id);
          return ms !== null && ms >= 1_000 ? `Waiting to send, ${Math.ceil(ms / 1000)} s` : 'Sending';
        }
        waiting.delete(m.id);
        return s.messages.status(m);
      },
      onActions: (m, button) => openActionMenu(button, actionsFor(m, button)),
      onReact: (m, emoji) => void s.messages.react(m, emoji).catch(fail),
      onRetry: (m) => void s.messages.retry(m.id).catch(fail),
      onQuote: (target) => void log.reveal(target),
      expiresIn: (m) => {
        if (!m.expire) return null;
        if (m.seenAt === undefined) return remainingWords(m.expire * 1000);
        timed.add(m.id);
        return remainingWords(m.seenAt + m.expire * 1000 - s.now());
      },
      file: {
        uploaded: (mid) => {
          const m = log.get(mid);
          return m && m.from === s.nick && (m.state === 'queued' || m.state === 'sending') ? uploads.fraction(mid) : null;
        },
        watchUpload: (mid, bar) => uploads.watch(mid, bar),
        fetch: (m, onProgress) => s.messages.fileBytes(m, onProgress),
        dataUrl: (m) => s.messages.fileUrl(m),
        mediaUrl: async (m, el) => {
          const [bytes, ready] = await Promise.all([s.messages.fileBytes(m), mediaReady()]);
          if (!ready) throw new Error(NO_PLAYER);
          return mediaUrl(el, bytes, m.attachment?.mime ?? 'application/octet-stream');
        },
      },
    },
  });

  function actionsFor(m: ChatMessage, button: HTMLButtonElement): MenuItem[] {
    const items: MenuItem[] = [];
    if (m.kind === 'text' && !m.deleted) {
      items.push({ label: 'Reply', run: () => composer.replyTo(m, m.from === s.nick ? 'yourself' : m.from) });
      items.push({ label: 'React', run: () => openEmojiPicker(button, (emoji) => void s.messages.react(log.get(m.id) ?? m, emoji).catch(fail)) });
    }
    if (s.messages.canEdit(m)) items.push({ label: 'Edit', run: () => composer.edit(m) });
    if (s.messages.canDelete(m))
      items.push({ label: 'Delete for everyone', run: () => void s.messages.deleteForEveryone(log.get(m.id) ?? m).catch(fail) });
    if (s.messages.canPin(m)) {
      const pinned = m.pin?.op === 'pin';
      items.push({ label: pinned ? 'Unpin' : 'Pin', run: () => void (pinned ? s.messages.unpin(m) : s.messages.pin(m)).catch(fail) });
    }
    if (items.length === 0) items.push({ label: 'Copy text', run: () => void navigator.clipboard?.writeText(m.note ?? '') });
    return items;
  }

  /**
   * Rows with a running disappearing timer: their countdown words are checked every second and
   * change seldom, so the page is looked at only when they do (a chat may show a thousand). Each
   * timer's name is kept true; its visible words, whose layout costs far more, are drawn again
   * only on the rows in view of the log (and a screen either side), and when a row comes into view.
   */
  const timed = new Set<string>();
  const near = new WeakSet<Element>();
  const watched = new WeakSet<Element>();
  const drawWords = (row: Element) => {
    const el = row.querySelector('.expiry');
    const label = el?.getAttribute('aria-label');
    const text = label ? `⏱ ${label.replace(/^Disappears in /, '')}` : null;
    if (el && text && el.textContent !== text) el.textContent = text;
  };
  const sight = new IntersectionObserver(
    (entries) => {
      for (const e of entries) {
        if (!e.isIntersecting) {
          near.delete(e.target);
          continue;
        }
        near.add(e.target);
        drawWords(e.target);
      }
    },
    { root: log.el, rootMargin: '100% 0px' },
  );
  const tick = setInterval(() => {
    if (waiting.size > 0) log.refresh([...waiting]);
    for (const id of timed) {
      const m = log.get(id);
      if (!m?.expire || m.seenAt === undefined || m.expired) {
        timed.delete(id);
        continue;
      }
      const row = log.row(id);
      if (row && !watched.has(row)) {
        watched.add(row);
        sight.observe(row);
      }
      const left = remainingWords(m.seenAt + m.expire * 1000 - s.now());
      if (!tens(left)) continue;
      const label = `Disappears in ${left}`;
      const el = row?.querySelector<HTMLElement>('.expiry');
      if (el && el.getAttribute('aria-label') !== label) {
        el.setAttribute('aria-label', label);
        el.title = label;
        if (near.has(row!)) el.textContent = `⏱ ${left}`;
      }
    }
  }, 1_000);

  /** Scrolls to a message (a pinned one) and gives it the focus. */
  async function focusMessage(mid: string): Promise<void> {
    if (!(await log.reveal(mid))) return;
    const row = log.el.querySelector<HTMLElement>(`[data-id="${CSS.escape(mid)}"]`);
    if (!row) return;
    row.tabIndex = -1;
    row.focus();
  }

  function room() {
    return kind === 'room' ? s.room(id) : undefined;
  }

  /** Why this chat is read-only now, or null. */
  function closed(): string | null {
    const meta = s.chatMeta(chat);
    if (kind === 'room' && !room() && meta?.left)
      return `You were removed from ${meta.title ?? 'this room'}. Its history stays here until you delete the chat.`;
    if (kind === 'dm' && meta?.gone) return `${id} deleted their account. Messages can no longer be sent to ${id}.`;
    return null;
  }

  function renderHead(): void {
    title.textContent = kind === 'room' ? (room()?.name ?? s.chatMeta(chat)?.title ?? 'Room') : id;
    const why = closed();
    dropBtn.hidden = why === null;
    panelBtn.hidden = why !== null && kind === 'room';
  }

  function renderPanel(): void {
    clear(panelSlot);
    panelBtn.setAttribute('aria-expanded', String(panel !== 'none'));
    const r = room();
    if (panel === 'settings' && r) panelSlot.append(roomSettings(s, r));
    if (panel === 'safety') panelSlot.append(safetyPanel(s, id));
  }

  function renderTrust(): void {
    clear(alertSlot);
    const held = s.keys.heldPeers(chat);
    for (const nick of held) {
      const showSafety =
        kind === 'dm'
          ? () => {
              panel = 'safety';
              renderPanel();
            }
          : null;
      alertSlot.append(keyChangeAlert(s, nick, showSafety, renderTrust));
    }
    const why = closed();
    // A room whose record does not vouch for it holds the composer at once, with no grace.
    const wait = kind === 'room' && room() ? s.roomMembership(id).wait : null;
    if (why) composer.block(why, true);
    else if (held.length > 0) composer.block('Sending is held until you review the key change above.');
    else composer.block(wait ? waitMessage(wait) : null);
  }

  function renderMembership(): void {
    const alert = kind === 'room' ? membershipAlert(s, id) : null;
    const text = alert?.textContent ?? '';
    if (text === memberText) return;
    memberText = text;
    clear(memberSlot);
    if (alert) memberSlot.append(alert);
    if (panel === 'settings') renderPanel();
  }

  const markRead = () => s.markChatRead(chat, log.records());

  const offs = [
    s.on('change', (c) => {
      // Records removed or expired go together (a thousand may expire at once).
      log.removeMany([...(c.removed ?? []), ...c.changed.filter((m) => m.expired).map((m) => m.id)]);
      for (const m of c.changed) if (!m.expired) log.upsert(m);
      // History that came from another device or a file: shown, not unread.
      if (c.imported) log.upsertMany(c.imported);
      const a = c.added;
      if (a && a.chat === chat) {
        log.upsert(a);
        if (a.from !== s.nick) markRead();
      }
    }),
    s.on('trust', renderTrust),
    s.on('chats', () => {
      renderHead();
      renderTrust();
    }),
    s.on('rooms', () => {
      renderHead();
      if (panel === 'settings') renderPanel();
      renderTrust();
      renderMembership();
    }),
    s.on('membership', (roomId) => {
      if (kind !== 'room' || roomId !== id) return;
      renderMembership();
      renderTrust();
    }),
  ];
  const onVisible = () => {
    if (document.visibilityState === 'visible') markRead();
  };
  document.addEventListener('visibilitychange', onVisible);

  renderHead();
  renderTrust();
  renderMembership();
  // Where the person stopped reading, asked before the chat is marked read.
  void s.messages
    .unreadSince(chat)
    .catch(() => undefined)
    .then((unread) => log.open(unread))
    .then(markRead);
  if (kind === 'dm') s.dmOpened(id);

  const logWrap = h('div', { class: 'log-wrap' }, log.el, log.jump);
  const el = h(
    'section',
    { class: 'main', 'aria-labelledby': 'conv-title' },
    head,
    alertSlot,
    memberSlot,
    panelSlot,
    problem,
    pins.el,
    logWrap,
    composer.el,
  );
  // Escape anywhere in the chat (not in an open menu, which closes itself) cancels a reply or an edit.
  el.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !e.defaultPrevented && composer.cancel()) e.preventDefault();
  });
  dropTarget(el, (files) => composer.attach(files));
  return {
    el,
    reveal: (mid) => void log.reveal(mid),
    destroy() {
      closePopups();
      composer.stop();
      log.destroy();
      clearInterval(tick);
      sight.disconnect();
      mute.destroy();
      timer.destroy();
      pins.destroy();
      uploads.stop();
      for (const off of offs) off();
      document.removeEventListener('visibilitychange', onVisible);
    },
  };
}
