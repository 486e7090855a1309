/**
 * The receiving side's reading of one chunk (transfer.ts keeps the state and decides what to
 * answer): open it under the transfer key, chained to the chunk before, decode its records, and
 * put together a record whose text came in pieces.
 */
import { b64, unb64 } from '../bytes.js';
import { checkRecord } from './history-codec.js';
import type { ChatMessage } from './model.js';
import type { HistoryChunkPlain } from './plaintext.js';
import type { ReceiveState, TransferLink, TransferProgress } from './transfer-types.js';
import { chainNext, chunkAad, decodePayload, openData } from './transfer-wire.js';

/** A chunk read: its whole records, the record still in pieces after it, and the chain value after it. */
export interface OpenedChunk {
  records: ChatMessage[];
  /** Records of the chunk left out because they failed the check. */
  dropped: number;
  carry: ReceiveState['carry'];
  hash: string;
}

/** Reads chunk `p`, the one `r` expects next; a string says why it is refused. */
export async function openChunk(
  l: Pick<TransferLink, 'key' | 'me' | 'deviceId'>,
  r: ReceiveState,
  p: HistoryChunkPlain,
): Promise<OpenedChunk | string> {
  const sealed = unb64(p.data);
  const prev = unb64(r.hash);
  const bytes = await openData(l.key, chunkAad(l.me, p.transfer, l.deviceId, p.seq, p.total, prev), sealed);
  if (!bytes) return 'forged or damaged';
  const payload = decodePayload(bytes);
  if (!payload) return 'damaged';
  let records: ChatMessage[] = [];
  let dropped = 0;
  let carry = r.carry;
  if ('records' in payload) ({ records, dropped } = payload);
  else {
    const piece = payload.piece;
    const first = piece.rec !== undefined;
    if (first ? carry : !carry) return 'damaged';
    carry = first ? { rec: piece.rec!, text: piece.text } : { rec: carry!.rec, text: carry!.text + piece.text };
    if (piece.end) {
      const whole = carry.rec ? checkRecord({ ...carry.rec, body: carry.text }) : null;
      if (whole) records = [whole];
      else dropped = 1;
      carry = undefined;
    }
  }
  return { records, dropped, carry, hash: b64(await chainNext(prev, sealed)) };
}

/** Where a transfer this device receives stands. */
export function receiveProgress(r: ReceiveState, deviceId: string): TransferProgress {
  return {
    role: 'receive',
    transfer: r.transfer,
    device: deviceId,
    chunks: { done: r.next, total: r.total },
    records: { done: r.recordsDone, total: r.records },
    dropped: r.dropped ?? 0,
    state: r.done ? 'done' : 'active',
    ...(r.archive && r.archive.files > 0 ? { files: { done: r.archive.filesDone, total: r.archive.files } } : {}),
    ...(r.error ? { error: r.error } : {}),
  };
}
