/**
 * The sending side's use of the outbox (transfer.ts keeps the state and decides when): queue a
 * transfer's chunks from one on, then its closing `history-done`, or take them back out.
 */
import { K_CHUNKS, type SendState, type TransferLink, type TransferProgress } from './transfer-types.js';
import { makeTag, tagAad } from './transfer-wire.js';

/** Queues chunks `from` to the last of `s` (kept in the store since the offer), then `history-done`. */
export async function queueChunks(l: TransferLink, s: SendState, from: number): Promise<void> {
  const chunks = (await l.store.getMeta(K_CHUNKS + s.transfer)) as string[] | undefined;
  if (!chunks) return;
  for (let seq = from; seq < s.total; seq++) {
    await l.enqueue(s.chat, {
      type: 'history-chunk',
      transfer: s.transfer,
      device: s.device,
      seq,
      total: s.total,
      data: chunks[seq]!,
      sentAt: 0,
    });
  }
  const done = { type: 'history-done' as const, transfer: s.transfer, device: s.device, total: s.total, digest: s.digest };
  await l.enqueue(s.chat, { ...done, tag: await makeTag(l.key, tagAad(l.me, done)), sentAt: 0 });
}

/** Takes what of the transfer still waits in the outbox back out. */
export async function dropQueued(l: TransferLink, s: SendState): Promise<void> {
  for (const i of [...l.pending()]) if ('transfer' in i.plain && i.plain.transfer === s.transfer) await l.drop(i.id);
}

/** Where a transfer this device sends stands. */
export function sendProgress(s: SendState): TransferProgress {
  const records = s.counts.reduce((a, b) => a + b, 0);
  const done = s.counts.slice(0, s.sent).reduce((a, b) => a + b, 0);
  return {
    role: 'send',
    transfer: s.transfer,
    device: s.device,
    chunks: { done: s.sent, total: s.total },
    records: { done, total: records },
    dropped: s.dropped ?? 0,
    state: s.confirmed ? 'done' : 'active',
    ...(s.archive && s.archive.files.length > 0 ? { files: { done: s.confirmed ? s.archive.files.length : 0, total: s.archive.files.length } } : {}),
    ...(s.error ? { error: s.error } : {}),
  };
}
