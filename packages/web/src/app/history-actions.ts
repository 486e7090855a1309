/**
 * The account's history as a whole, as the Session offers it (`session.history`): a history file
 * to export or import (with the files kept on this device), and the transfer between the
 * account's devices (docs/CRYPTO.md): answering a device that asks, resuming after a reload, and
 * asking when this device has none. The Session emits the transfer's events.
 */
import {
  attachTransfer,
  exportHistory,
  importHistory,
  type BlobLike,
  type Conversations,
  type ExportResult,
  type HistoryTransfer,
  type ImportResult,
  type KeptFilesSource,
  type Messenger,
  type TransferEvent,
} from '@svc/sdk';
import type { IdbConversationStore } from './conversation-store.js';
import type { KeptFiles } from './keptfiles.js';
import { keptSource } from './keptsource.js';

export class HistoryActions {
  /** The kept files as a history export, import or transfer reads and writes them. */
  private readonly kept: KeptFilesSource;
  private readonly transfer: HistoryTransfer;

  constructor(
    private readonly messenger: Messenger,
    private readonly conv: Conversations,
    private readonly store: IdbConversationStore,
    files: KeptFiles,
    deviceId: string,
  ) {
    this.kept = keptSource(files);
    // The history goes as an archive in the attachment store, with the files kept here.
    this.transfer = attachTransfer(messenger, conv, deviceId, { kept: this.kept });
  }

  /** The history on this device as a file sealed under the account's export key; `withFiles`: the kept files go in too. */
  exportFile(withFiles: boolean): Promise<ExportResult> {
    const account = { nick: this.messenger.nick, exportKey: this.messenger.exportKey };
    return exportHistory(account, this.store, Date.now(), withFiles ? { files: this.kept } : {});
  }

  /** Merges an exported history file (and the files it carries) into this device's history. */
  importFile(file: BlobLike): Promise<ImportResult> {
    return importHistory({ nick: this.messenger.nick, exportKey: this.messenger.exportKey }, this.conv, file, { files: this.kept });
  }

  /** The answer to another device of the account that asked for the history: send it, or decline. */
  async answerRequest(device: string, answer: 'send' | 'decline'): Promise<void> {
    if (answer === 'send') await this.transfer.send(device);
    else await this.transfer.decline(device);
  }

  /** Calls `fn` with each event of the transfer (a device asks, how far a transfer is); for the Session to emit. */
  onTransfer(fn: (event: TransferEvent) => void): () => void {
    return this.transfer.on(fn);
  }

  /**
   * Resumes a transfer that a reload interrupted; returns what to tell the views again: the
   * requests that came while this device was away (those of devices the service still lists) and
   * the transfers under way.
   */
  async resume(): Promise<TransferEvent[]> {
    await this.transfer.load();
    const events: TransferEvent[] = (await this.transfer.pendingRequests()).map((request) => ({ type: 'request', request }));
    for (const progress of this.transfer.progress()) if (progress.state === 'active') events.push({ type: 'progress', progress });
    return events;
  }

  /** Asks the account's other devices for the history (a device signed in without any). */
  request(): Promise<void> {
    return this.transfer.request();
  }
}
