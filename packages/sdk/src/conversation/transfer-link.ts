/**
 * The carrier of the history transfer: a private room whose only member is the account, named
 * TRANSFER_ROOM_NAME. A room message reaches every device of every member but the sending one,
 * and this room's keys are wrapped for the account alone, so the room is a channel between the
 * account's own devices. What the service can see of it is in docs/CRYPTO.md.
 *
 * Two devices that create it at the same moment make two such rooms: every device accepts the
 * transfer from any of them and sends into the one with the smallest id.
 */
import type { Room } from '@svc/protocol';
import type { KeptFilesSource } from '../attachments/files.js';
import { maxPlainSize } from '../crypto/file.js';
import type { Messenger } from '../messenger.js';
import { SdkError } from '../errors.js';
import { splitChatId, type ChatId } from '../envelopes.js';
import type { Change, HistoryMessage } from './changes.js';
import type { OutboxItem } from './model.js';
import type { Outbox } from './outbox.js';
import type { ConversationStore } from './store.js';
import type { AttachmentSender } from '../attachments/sender.js';
import { HistoryTransfer } from './transfer.js';
import type { ArchiveLink, TransferLink } from './transfer-types.js';

/**
 * What the transfer needs of a device's Conversations (conversations.ts), named here so that the
 * two modules do not import each other: Conversations is one.
 */
export interface TransferHost {
  readonly store: ConversationStore;
  readonly outbox: Pick<Outbox, 'add' | 'pending' | 'drop'>;
  readonly attachments: Pick<AttachmentSender, 'uploader' | 'download'>;
  readonly signal: AbortSignal;
  notify(change: Change): void;
  handleHistory(f: ((d: HistoryMessage) => Promise<void>) | null): void;
  onSent(f: (item: OutboxItem, ts: number) => Promise<void> | void): () => void;
}

export interface TransferOptions {
  /** The files kept on this device: sent with the history, and where received ones go. */
  kept?: KeptFilesSource;
}

/** The attachment store as the archive transfer uses it: the Conversations' uploader and downloader. */
export function archiveLink(c: TransferHost, o: TransferOptions = {}): ArchiveLink {
  const up = c.attachments.uploader;
  return {
    async maxBytes() {
      try {
        return maxPlainSize((await up.limits()).maxBytes);
      } catch (e) {
        // A service without the attachment store answers its config without limits.
        if (e instanceof SdkError && e.code === 'not_found') return null;
        throw e;
      }
    },
    create: (plainSize) => up.create(plainSize),
    async upload(part, source) {
      const u = await up.run(await up.resume(part.id, part.key, part.plainSize), source, { signal: c.signal });
      return { sha256: u.sha256, size: u.size };
    },
    download: (part) => c.attachments.download(part, { signal: c.signal }),
    discard: (id) => up.discard(id),
    ...(o.kept ? { kept: o.kept } : {}),
    signal: c.signal,
  };
}

/** Neutral on purpose: the service stores room names. The app hides rooms for which isTransferRoom holds. */
export const TRANSFER_ROOM_NAME = 'Devices';

/** Whether `room` is the account's private room of its devices (owned by `me`, no other member). */
export function isTransferRoom(room: Room | undefined, me: string): boolean {
  return !!room && room.name === TRANSFER_ROOM_NAME && room.owner === me && room.members.length === 1 && room.members[0] === me;
}

/** The link of a signed-in Messenger and its Conversations. */
export function messengerLink(m: Messenger, c: TransferHost, deviceId = m.api.device, o?: TransferOptions): TransferLink {
  if (!deviceId) throw new SdkError('not_ready');
  let known: ChatId | null = null;
  const find = (): Room | undefined => m.rooms.filter((r) => isTransferRoom(r, m.nick)).sort((a, b) => (a.id < b.id ? -1 : 1))[0];
  return {
    me: m.nick,
    deviceId,
    key: m.transferKey,
    store: c.store,
    now: () => m.api.now(),
    async carrier() {
      if (known && isTransferRoom(m.room(splitChatId(known).id), m.nick)) return known;
      let room = find();
      if (!room) {
        await m.syncRooms();
        room = find() ?? (await m.createRoom(TRANSFER_ROOM_NAME));
      }
      return (known = `room:${room.id}`);
    },
    isCarrier(chat) {
      const { kind, id } = splitChatId(chat);
      return kind === 'room' && isTransferRoom(m.room(id), m.nick);
    },
    enqueue: async (chat, plain) => void (await c.outbox.add(chat, plain, { priority: 'bulk' })),
    pending: () => c.outbox.pending,
    drop: (id) => c.outbox.drop(id),
    notify: (change) => c.notify(change),
    devices: async () => (await m.api.devices()).map((d) => d.id),
    ...(o ? { archive: archiveLink(c, o) } : {}),
  };
}

/**
 * The history transfer of a signed-in device, wired into its Conversations: history-* messages go
 * to it and the outbox reports its chunks. Call load() after the event stream's first `ready`.
 */
export function attachTransfer(m: Messenger, c: TransferHost, deviceId?: string, o: TransferOptions = {}): HistoryTransfer {
  const t = new HistoryTransfer(messengerLink(m, c, deviceId, o));
  c.handleHistory((d) => t.handle(d));
  c.onSent((item) => t.sent(item));
  return t;
}
