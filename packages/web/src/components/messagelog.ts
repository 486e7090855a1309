/**
 * The message log of the open chat (role `log`, a list of `listitem`s), rendered incrementally and
 * keyed by record id: opening a chat reads and decrypts one page of the newest records; a new
 * record appends its row; a changed record replaces only its own row (and the rows quoting it), or
 * only the row's status when nothing else changed; an older page is read when asked for. Nothing
 * else is rendered or decrypted again.
 *
 * Consecutive messages of one sender within 5 minutes form a group: its first row shows the name
 * and time, the others only their text (the name and time stay for screen readers). Opened with
 * unread messages, the log reads back to the first of them, puts the separator "New messages"
 * above it and scrolls there; scrolled up from the bottom, a "Jump to latest" button shows.
 *
 * Drawing thousands of rows and laying them out takes far longer than a person waits for a chat
 * to open, so the log draws the rows down to a screen past "New messages" first, and the newer
 * ones after that a slice per task (the log is `aria-busy` meanwhile, so a screen reader does not
 * read them out as they come). The records are all known from the start: reading marks them all.
 */
import type { ChatId, ChatMessage } from '@svc/sdk';
import { byTime } from '@svc/sdk';
import { onPopupClosed, popupIn } from './actionmenu.js';
import { clear, h } from './dom.js';
import { dayKey, dayLabel } from './format.js';
import { messageItem, type ItemContext } from './messageitem.js';
import { continues, NEW_MESSAGES, patchedInPlace } from './log-rows.js';
import type { MessageLog, Unread } from './messagelog-types.js';

export type { MessageLog, Unread } from './messagelog-types.js';

/** Records read when a chat opens and per "Show older messages". */
export const PAGE = 100;

/** Records read above "New messages" when a chat opens with unread ones, at least. */
const CONTEXT = 20;

/** Rows drawn at once below "New messages" when a chat opens, and then per task until all are. */
export const SLICE = 60;

export function messageLog(o: {
  chat: ChatId;
  label: string;
  empty: string;
  load: (before?: { ts: number; id: string }, limit?: number) => Promise<ChatMessage[]>;
  /** A quoted record not on screen, of this chat only (Conversations.quoted). */
  fetch: (id: string) => Promise<ChatMessage | undefined>;
  item: Omit<ItemContext, 'quoted'>;
}): MessageLog {
  const list = h('ul', { class: 'messages' });
  const older = h('button', { type: 'button', class: 'link older' }, 'Show older messages');
  older.hidden = true;
  const emptyNote = h('p', { class: 'empty' }, o.empty);
  const el = h('div', { class: 'log', role: 'log', 'aria-label': o.label, 'aria-live': 'polite', tabindex: '0' }, older, list, emptyNote);
  const jump = h('button', { type: 'button', class: 'jump' }, 'Jump to latest');
  jump.hidden = true;
  jump.addEventListener('click', () => {
    drawAll();
    el.scrollTop = el.scrollHeight;
    jump.hidden = true;
  });
  el.addEventListener('scroll', () => (jump.hidden = atBottom()), { passive: true });
  /** The first unread record when the chat opened: "New messages" goes above it. */
  let unreadFirst: string | null = null;
  const newSep = h('li', { class: 'new-sep' }, h('div', { role: 'separator', 'aria-label': NEW_MESSAGES }, NEW_MESSAGES));

  /**
   * Records in time order, and each drawn one's row: the drawn rows are always the oldest ones of
   * `order` (the newer ones wait to be drawn, a slice per task, while `filling`).
   */
  let order: ChatMessage[] = [];
  /** The same records by id; set before a row renders, so a reply finds the message it quotes. */
  const recs = new Map<string, ChatMessage>();
  const rows = new Map<string, HTMLLIElement>();
  /** Quoted records that are not on screen, read once. */
  const quotes = new Map<string, ChatMessage | null>();
  // The row's buttons act on the newest record of its id, not on the one it was drawn from: a row
  // whose status words alone changed is kept (replaceRow), so it may be older than its record.
  const latest = (m: ChatMessage) => recs.get(m.id) ?? m;
  const ctx: ItemContext = {
    ...o.item,
    quoted: (id) => recs.get(id) ?? quotes.get(id) ?? undefined,
    onActions: (m, button) => o.item.onActions(latest(m), button),
    onReact: (m, emoji) => o.item.onReact(latest(m), emoji),
    onRetry: (m) => o.item.onRetry(latest(m)),
  };

  /** The task that draws the next slice of rows not drawn yet, if any wait. */
  let filling: ReturnType<typeof setTimeout> | null = null;

  /** At the newest record: not while newer rows wait to be drawn. */
  function atBottom(): boolean {
    return filling === null && el.scrollHeight - el.scrollTop - el.clientHeight < 60;
  }

  function render(m: ChatMessage): HTMLLIElement {
    const li = messageItem(ctx, m);
    if (m.replyTo && !rows.has(m.replyTo) && !quotes.has(m.replyTo)) {
      const target = m.replyTo;
      quotes.set(target, null);
      void o.fetch(target).then((q) => {
        if (!q || q.chat !== o.chat) return;
        quotes.set(target, q);
        refreshQuoting(target);
      });
    }
    return li;
  }

  function daySep(ts: number): HTMLLIElement {
    return h('li', { class: 'day', 'aria-hidden': 'true', 'data-day': dayKey(ts) }, dayLabel(ts));
  }

  /** Appends the row of `m`, drawn, after that of `prev` (the record before it), with a day separator and "New messages" where due. */
  function place(m: ChatMessage, prev: ChatMessage | undefined): void {
    if (!prev || dayKey(prev.ts) !== dayKey(m.ts)) list.append(daySep(m.ts));
    const row = rows.get(m.id)!;
    const sep = m.id === unreadFirst;
    if (sep) list.append(newSep);
    row.classList.toggle('cont', !sep && continues(prev, m));
    list.append(row);
  }

  /** Builds the list again from the drawn rows (kept, not rendered again), with day separators and groups. */
  function rebuild(): void {
    clear(list);
    let prev: ChatMessage | undefined;
    for (const m of order) {
      if (!rows.has(m.id)) break;
      place(m, prev);
      prev = m;
    }
    emptyNote.hidden = order.length > 0;
  }

  /** Draws up to `n` of the records that wait, oldest first, below the drawn ones; returns whether any still wait. */
  function drawNext(n: number): boolean {
    let i = order.findIndex((m) => !rows.has(m.id));
    for (const end = Math.min(order.length, i + n); i >= 0 && i < end; i++) {
      const m = order[i]!;
      rows.set(m.id, render(m));
      place(m, order[i - 1]);
    }
    return i >= 0 && i < order.length;
  }

  /** Draws the rest a slice per task, so the page answers input between them. */
  function fill(): void {
    if (filling !== null) return;
    el.setAttribute('aria-busy', 'true');
    const step = () => {
      filling = null;
      if (drawNext(SLICE)) filling = setTimeout(step, 0);
      else done();
    };
    filling = setTimeout(step, 0);
  }

  function done(): void {
    el.removeAttribute('aria-busy');
    jump.hidden = atBottom();
  }

  /** Keeps the drawn rows the oldest ones: a record that sorts among them (its time changed) is drawn too. */
  function closeGaps(): void {
    let last = -1;
    order.forEach((m, i) => {
      if (rows.has(m.id)) last = i;
    });
    for (const m of order.slice(0, last)) if (!rows.has(m.id)) rows.set(m.id, render(m));
  }

  /** Draws every record that waits, now (before jumping to the newest or to one of them). */
  function drawAll(): void {
    if (filling === null) return;
    clearTimeout(filling);
    filling = null;
    drawNext(Infinity);
    done();
  }

  function refreshQuoting(id: string): void {
    for (const m of order) if (m.replyTo === id) replaceRow(m);
  }

  /**
   * Rows kept as they are while their "Message actions" menu or emoji picker is open: rendering
   * them again would take the open menu away under the person's pointer (a receipt or a reaction
   * arriving is enough). They render once it closes.
   */
  const held = new Set<string>();
  const offClosed = onPopupClosed(() => {
    const ids = [...held];
    held.clear();
    for (const id of ids) {
      const m = recs.get(id);
      if (m) replaceRow(m);
    }
  });

  /**
   * Draws the row of `m` again. When nothing but its status words changed (a receipt, the outbox's
   * countdown: the most frequent changes) the row stays and only its status element is swapped:
   * a button replaced between the press and the release of a click loses the click, for a person
   * as for a test, and a receipt may arrive at any moment.
   */
  function replaceRow(m: ChatMessage): void {
    const old = rows.get(m.id);
    // Not drawn yet: it is drawn as it is when its turn comes.
    if (!old) return;
    if (old.isConnected && popupIn(old)) {
      held.add(m.id);
      return;
    }
    const li = render(m);
    // The group is the list's to say (rebuild), not the record's.
    if (old?.classList.contains('cont')) li.classList.add('cont');
    if (old?.isConnected && patchedInPlace(old, li)) return;
    rows.set(m.id, li);
    if (old?.isConnected) old.replaceWith(li);
  }

  async function loadOlder(limit = PAGE): Promise<number> {
    const first = order[0];
    const page = await o.load(first ? { ts: first.ts, id: first.id } : undefined, limit);
    // A message that disappeared is never drawn (its record stays, as a tombstone).
    const fresh = page.filter((m) => !rows.has(m.id) && !m.expired);
    for (const m of fresh) recs.set(m.id, m);
    for (const m of fresh) rows.set(m.id, render(m));
    order = [...fresh, ...order].sort(byTime);
    older.hidden = page.length < limit;
    const keep = el.scrollHeight - el.scrollTop;
    rebuild();
    el.scrollTop = el.scrollHeight - keep;
    return fresh.length;
  }
  older.addEventListener('click', () => void loadOlder());
  let opened: Promise<void> | null = null;

  /**
   * Reads pages until the first unread record is known (the count says how far, at least), then
   * draws the rows down to a screen below it, scrolls there, and draws the rest after.
   */
  async function openAt(unread?: Unread): Promise<void> {
    const first = unread?.first ?? null;
    if (!first) {
      await loadOlder(PAGE);
      el.scrollTop = el.scrollHeight;
      return;
    }
    // The records from the read marker on, read once for the count, and a page's worth before them
    // (at least a few, to scroll up to); without them, a page down to the first unread.
    const since = unread!.since;
    let page: ChatMessage[];
    if (since?.length) {
      const limit = Math.max(CONTEXT, PAGE - since.length);
      const before = await o.load({ ts: since[0]!.ts, id: since[0]!.id }, limit);
      older.hidden = before.length < limit;
      page = [...before, ...since];
    } else {
      const limit = Math.max(PAGE, unread!.count + CONTEXT);
      page = await o.load(undefined, limit);
      older.hidden = page.length < limit;
    }
    // A message that disappeared is never drawn (its record stays, as a tombstone). One that came
    // while reading is kept, as it is newer; it is drawn again in its turn.
    const byId = new Map(page.filter((m) => !m.expired).map((m) => [m.id, m]));
    for (const m of order) byId.set(m.id, m);
    order = [...byId.values()].sort(byTime);
    rows.clear();
    for (const m of order) recs.set(m.id, m);
    // More unread than counted (some came meanwhile): older pages, drawn whole.
    for (let guard = 0; !recs.has(first) && guard < 200; guard++) {
      if ((await loadOlder()) === 0) break;
    }
    const at = order.findIndex((m) => m.id === first);
    if (at >= 0) unreadFirst = first;
    const end = at >= 0 ? at + SLICE : order.length;
    for (const m of order.slice(0, end)) if (!rows.has(m.id)) rows.set(m.id, render(m));
    rebuild();
    el.scrollTop = at >= 0 ? Math.max(0, newSep.offsetTop - 8) : el.scrollHeight;
    if (end < order.length) fill();
    jump.hidden = atBottom();
  }

  return {
    el,
    jump,
    open(unread) {
      opened ??= openAt(unread);
      return opened;
    },
    upsert(m) {
      if (m.chat !== o.chat) return;
      if (m.expired) return this.remove(m.id);
      const follow = atBottom();
      const i = order.findIndex((x) => x.id === m.id);
      if (i >= 0) {
        const moved = order[i]!.ts !== m.ts;
        order[i] = m;
        recs.set(m.id, m);
        replaceRow(m);
        if (quotes.has(m.id)) quotes.set(m.id, m);
        refreshQuoting(m.id);
        if (moved) {
          order.sort(byTime);
          closeGaps();
          rebuild();
        }
      } else if (filling !== null && m.from !== o.item.me) {
        // Newer rows wait to be drawn: this one takes its turn after them.
        recs.set(m.id, m);
        order.push(m);
        order.sort(byTime);
        closeGaps();
        if (rows.has(m.id)) rebuild();
      } else {
        // One's own message shows at once, at the foot of the log.
        drawAll();
        recs.set(m.id, m);
        rows.set(m.id, render(m));
        const last = order.at(-1);
        order.push(m);
        if (!last || byTime(last, m) < 0) {
          // The usual case: the newest record, appended without touching the others.
          if (!last || dayKey(last.ts) !== dayKey(m.ts)) list.append(daySep(m.ts));
          rows.get(m.id)!.classList.toggle('cont', continues(last, m));
          list.append(rows.get(m.id)!);
          emptyNote.hidden = true;
        } else {
          order.sort(byTime);
          rebuild();
        }
      }
      if (follow || m.from === o.item.me) el.scrollTop = el.scrollHeight;
      jump.hidden = atBottom();
    },
    upsertMany(ms) {
      this.removeMany(ms.filter((m) => m.chat === o.chat && m.expired).map((m) => m.id));
      const mine = ms.filter((m) => m.chat === o.chat && !m.expired);
      if (mine.length === 0) return;
      drawAll();
      const follow = atBottom();
      const byId = new Map(order.map((m) => [m.id, m]));
      for (const m of mine) {
        byId.set(m.id, m);
        recs.set(m.id, m);
        rows.set(m.id, render(m));
        if (quotes.has(m.id)) quotes.set(m.id, m);
      }
      order = [...byId.values()].sort(byTime);
      rebuild();
      if (follow) el.scrollTop = el.scrollHeight;
    },
    remove(id) {
      this.removeMany([id]);
    },
    removeMany(ids) {
      const gone = new Set(ids);
      // A reply quoting one of them, on screen or not, no longer shows its text (an expired
      // message's text must be gone from every view).
      const known = new Set([...gone].filter((id) => quotes.has(id) || recs.has(id)));
      for (const id of known) {
        quotes.set(id, null);
        recs.delete(id);
      }
      if (known.size > 0) for (const m of order) if (m.replyTo && known.has(m.replyTo) && !gone.has(m.id)) replaceRow(m);
      const before = order.length;
      order = order.filter((m) => !gone.has(m.id));
      if (order.length === before) return;
      let drawn = false;
      for (const id of gone) if (rows.delete(id)) drawn = true;
      // One rebuild for all of them: a thousand expiring at once must not lay the log out a thousand times.
      if (drawn || order.length === 0) rebuild();
    },
    get: (id) => recs.get(id),
    row: (id) => rows.get(id),
    records: () => order,
    refresh(ids) {
      for (const id of ids) {
        const m = recs.get(id);
        if (m) replaceRow(m);
      }
    },
    async reveal(id) {
      await opened;
      if (recs.has(id) && !rows.has(id)) drawAll();
      for (let guard = 0; !rows.has(id) && guard < 200; guard++) {
        if ((await loadOlder()) === 0) break;
      }
      const li = rows.get(id);
      if (!li) return false;
      li.scrollIntoView({ block: 'center' });
      li.classList.add('found');
      setTimeout(() => li.classList.remove('found'), 2_000);
      return true;
    },
    destroy() {
      offClosed();
      if (filling !== null) clearTimeout(filling);
    },
  };
}
