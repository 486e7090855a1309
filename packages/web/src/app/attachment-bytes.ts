/**
 * A message's file as the views open it: the copy kept on this device (a received file, or one's
 * own still waiting for its upload), else downloaded and checked by the SDK, then kept; and as a
 * data: URL (what the CSP lets an image show), made once per attachment.
 */
import type { ChatMessage, Conversations } from '@svc/sdk';
import type { KeptFiles, uploadFiles } from './keptfiles.js';

export class AttachmentBytes {
  /** The data: URL of each attachment asked for, so a re-rendered photo is not read again. */
  private readonly urls = new Map<string, Promise<string>>();

  constructor(
    private readonly files: KeptFiles,
    private readonly uploads: ReturnType<typeof uploadFiles>,
    private readonly conv: Conversations,
  ) {}

  /** The file's bytes; `onProgress` as a fraction of a download. */
  async bytes(msg: ChatMessage, onProgress: (fraction: number) => void = () => undefined): Promise<Uint8Array> {
    const ref = msg.attachment;
    if (!ref) throw new Error('This message has no file.');
    // Kept, or one's own file still waiting for its upload.
    const kept =
      (await this.keptBytes(ref.id)) ??
      (await this.uploads
        .get(ref.id)
        .then((f) => f?.bytes())
        .catch(() => undefined));
    if (kept) return kept;
    const pieces: Uint8Array[] = [];
    let got = 0;
    for await (const piece of this.conv.attachments.download(ref, { onProgress: (d, t) => onProgress(t > 0 ? d / t : 0) })) {
      pieces.push(piece);
      got += piece.length;
    }
    const out = new Uint8Array(got);
    let at = 0;
    for (const piece of pieces) {
      out.set(piece, at);
      at += piece.length;
    }
    // Kept for the history, unless its message went while it came down (deleted, or its timer ran
    // out): an expired message's file must not stay on the device. A failure to keep it does not
    // take the file from the person.
    const still = await this.conv.quoted(msg.chat, msg.id).catch(() => undefined);
    if (still && !still.expired && !still.deleted) await this.files.put(ref.id, out).catch((e: unknown) => console.warn('keeping a file:', e));
    return out;
  }

  /** The kept copy of a file; a damaged one is dropped (and the file downloaded again). */
  private async keptBytes(id: string): Promise<Uint8Array | undefined> {
    try {
      return await this.files.get(id);
    } catch (error) {
      console.warn('a kept file did not open:', error);
      await this.files.remove(id).catch(() => undefined);
      return undefined;
    }
  }

  /** The file as a data: URL, downloaded once per attachment; a failure is not kept, so the next look tries again. */
  dataUrl(msg: ChatMessage): Promise<string> {
    const ref = msg.attachment;
    if (!ref) return Promise.reject(new Error('This message has no file.'));
    let url = this.urls.get(ref.id);
    if (!url) {
      url = this.bytes(msg).then(
        (bytes) =>
          new Promise<string>((resolve, reject) => {
            const reader = new FileReader();
            reader.onload = () => resolve(reader.result as string);
            reader.onerror = () => reject(reader.error ?? new Error('The file could not be read.'));
            reader.readAsDataURL(new Blob([bytes as BlobPart], { type: ref.mime }));
          }),
      );
      this.urls.set(ref.id, url);
      url.catch(() => this.urls.delete(ref.id));
    }
    return url;
  }

  /** The file went (its message deleted or expired, its chat forgotten). */
  forget(id: string): void {
    this.urls.delete(id);
  }
}
