/**
 * A photo to a room: one member uploads it once, finishes it and sends a room message (whose
 * ciphertext would carry the id and key); every other member, on the message's event, downloads
 * it. Timed from the first part to the last member's last byte, with the upload and the message's
 * delivery apart. Each member holds one device with an open event stream and a socket of its own.
 */
import { UPLOAD_IN_FLIGHT } from '@svc/sdk';
import { roomBody, ulid } from './fixtures.js';
import { pool } from './http.js';
import { AttachmentClient, type BenchFile } from './attachment-client.js';
import { EventStream } from './sse.js';
import type { Account, Room, Target } from './targets.js';

export interface RoomPhotoRun {
  /** From the first part to the finish's answer. */
  uploadMs: number;
  /** From the message's send to the last member's event. */
  deliveryMs: number;
  /** From the message's send to the last member's last byte. */
  downloadsMs: number;
  /** From the first part to the last member's last byte: what the members wait, all told. */
  totalMs: number;
  /** The id of the stored photo, to be deleted once its bytes in store were read. */
  id: string;
}

interface Member {
  account: Account;
  client: AttachmentClient;
  stream: EventStream;
}

export class RoomPhoto {
  /** The message each member waits for, and what to do when it comes. */
  private expected: { messageId: string; onEvent: (m: Member) => void } | null = null;

  private constructor(
    private readonly room: Room,
    private readonly sender: AttachmentClient,
    private readonly members: Member[],
  ) {}

  static async setup(t: Target, size: number, tag: string): Promise<RoomPhoto> {
    const accounts = await t.createAccounts(tag, size, 1);
    const room = await t.createRoom(accounts);
    const members: Member[] = [];
    const photo = new RoomPhoto(room, new AttachmentClient(t.api.port, accounts[0]!.cookie, UPLOAD_IN_FLIGHT), members);
    await pool(accounts.slice(1), 16, async (account) => {
      const member = { account, client: new AttachmentClient(t.api.port, account.cookie) } as Member;
      member.stream = await EventStream.open(t.api.port, account.devices[0]!, account.cookie, {
        onMsg: (envelopeId) => {
          if (photo.expected?.messageId === envelopeId) photo.expected.onEvent(member);
        },
      });
      await member.stream.waitReady(60_000);
      members.push(member);
    });
    return photo;
  }

  get sizeOfRoom(): number {
    return this.room.members.length;
  }

  /** Uploads `file` with `inFlight` parts at a time, sends the message, and waits for every member's download. */
  async run(file: BenchFile, inFlight: number): Promise<RoomPhotoRun> {
    const messageId = ulid();
    let id = '';
    let lastEvent = 0;
    let pending = this.members.length;
    let settle: (e?: Error) => void = () => undefined;
    const allDone = new Promise<number>((resolve, reject) => {
      settle = (e) => (e ? reject(e) : resolve(performance.now()));
    });
    this.expected = {
      messageId,
      onEvent: (m) => {
        lastEvent = performance.now();
        m.client.download(id).then(
          (got) => {
            if (got.status !== 200 || got.bytes !== file.ciphertext.length)
              return settle(new Error(`${m.account.nick}: download answered HTTP ${got.status} with ${got.bytes} bytes`));
            if (--pending === 0) settle();
          },
          (e: Error) => settle(e),
        );
      },
    };
    const t0 = performance.now();
    id = await this.sender.upload(file, inFlight);
    const uploaded = performance.now();
    const owner = this.room.members[0]!;
    const sent = await this.sender.send(
      'POST',
      '/api/messages',
      JSON.stringify(roomBody(this.room.id, this.room.keyId, messageId)),
      owner.devices[0],
    );
    if (sent.status !== 202) throw new Error(`room message: HTTP ${sent.status} ${sent.body.slice(0, 300)}`);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${pending} members still without the photo after 120 s`)), 120_000);
    });
    try {
      const end = await Promise.race([allDone, timeout]);
      return { uploadMs: uploaded - t0, deliveryMs: lastEvent - uploaded, downloadsMs: end - uploaded, totalMs: end - t0, id };
    } finally {
      clearTimeout(timer);
      this.expected = null;
    }
  }

  /** Deletes a photo of an earlier run (the uploader may). */
  remove(id: string): Promise<void> {
    return this.sender.remove(id);
  }

  close(): void {
    this.sender.close();
    for (const m of this.members) {
      m.stream.close();
      m.client.close();
    }
  }
}
