/**
 * Attachment uploads for the crash test: a client that uploads files in parts and finishes them,
 * one after another, and keeps account of what the service answered. A part or a finish that got
 * no answer (the service died) or a 500 `internal` has an unknown outcome: the upload is put aside
 * as interrupted, with the parts that were answered 204, to be resumed after the crash as a client
 * resumes one (the parts not answered sent again, then the finish).
 */
import { createHash, randomBytes } from 'node:crypto';
import { ATTACHMENT } from '@svc/protocol';
import { id16, type Client, type Res } from '@svc/testkit/harness';

const PART = ATTACHMENT.partBytes;

export interface Upload {
  id: string;
  file: Buffer;
  /** Part numbers answered 204. */
  stored: Set<number>;
}

export const partsOf = (file: Buffer): number => Math.ceil(file.length / PART);
const partData = (file: Buffer, n: number) => file.subarray(n * PART, (n + 1) * PART).toString('base64url');
const finishBody = (file: Buffer) => ({ parts: partsOf(file), size: file.length, sha256: createHash('sha256').update(file).digest('base64url') });

function unknownOutcome(r: Res | null): boolean {
  return r === null || (r.status === 500 && (r.json as { error?: unknown } | undefined)?.error === 'internal');
}

export class Uploader {
  /** Uploads whose finish was answered 201 (or 200). */
  readonly finished: Upload[] = [];
  /** Uploads cut by a part or a finish with an unknown outcome. */
  readonly interrupted: Upload[] = [];
  /** Answers that are neither a success nor an unknown outcome: each fails the test. */
  readonly errors: string[] = [];
  private running = false;
  private loop: Promise<void> | null = null;

  constructor(readonly c: Client) {}

  /** Uploads files of one to four parts back to back, until stopped or the service stops answering. */
  start(): void {
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        const file = randomBytes(PART * (1 + Math.floor(Math.random() * 3)) + 1 + Math.floor(Math.random() * PART));
        const u: Upload = { id: id16(), file, stored: new Set() };
        if (!(await this.send(u))) {
          this.interrupted.push(u);
          return;
        }
      }
    })();
  }

  /** Waits for the loop to end: it ends on its own once the service is gone. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  /** Sends the parts not yet answered 204, then the finish; false when an answer did not come. */
  async send(u: Upload): Promise<boolean> {
    for (let n = 0; n < partsOf(u.file); n++) {
      if (u.stored.has(n)) continue;
      const r = await this.c.put(`/api/attachments/${u.id}/parts/${n}`, { data: partData(u.file, n) }).catch(() => null);
      if (unknownOutcome(r)) return false;
      if (r!.status !== 204) {
        this.errors.push(`part ${n} of ${u.id}: ${r!.status} ${r!.text}`);
        return true;
      }
      u.stored.add(n);
    }
    const r = await this.c.post(`/api/attachments/${u.id}/finish`, finishBody(u.file)).catch(() => null);
    if (unknownOutcome(r)) return false;
    // 200: a finish of an earlier try was committed though its answer was lost.
    if (r!.status === 201 || r!.status === 200) this.finished.push(u);
    else this.errors.push(`finish of ${u.id}: ${r!.status} ${r!.text}`);
    return true;
  }
}
