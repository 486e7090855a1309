/**
 * An attachment message as a chat record: a text record whose `attachment` says where the file is
 * and how to open it, and whose `body` is the caption. Being a text, it takes edits (of the
 * caption), reactions, receipts, replies and deletion by the same rules as any text.
 */
import type { ChatId } from '../envelopes.js';
import type { AttachmentRef } from '../wire/attachment-plain.js';
import type { ChatMessage } from '../conversation/model.js';
import type { AttachmentPlain } from '../wire/plaintext.js';

/** The record's view of an attachment plaintext: every field but the caption and the message's own. */
export function attachmentRef(p: AttachmentPlain): AttachmentRef {
  const { sentAt: _s, mid: _m, caption: _c, expire: _e, ...ref } = p;
  delete (ref as { v?: number }).v;
  return ref;
}

/** A new record for an attachment message `id` from `from` in `chat`, accepted at `ts`. */
export function attachmentRecord(d: { id: string; chat: ChatId; ts: number; from: string }, p: AttachmentPlain): ChatMessage {
  return {
    id: d.id,
    chat: d.chat,
    ts: d.ts,
    from: d.from,
    sentAt: p.sentAt,
    kind: 'text',
    attachment: attachmentRef(p),
    ...(p.caption ? { body: p.caption } : {}),
    ...(p.expire ? { expire: p.expire } : {}),
  };
}
