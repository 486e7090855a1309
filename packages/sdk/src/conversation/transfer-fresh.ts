/**
 * What keeps the history transfer's messages fresh (transfer.ts asks it). The service can deliver
 * any envelope it once relayed again, at any time, and a tag or seal says only that one of the
 * account's devices made it, not when. So each side remembers, in the store across reloads:
 *
 * - the new device, the nonce of each request it made and still waits on: an offer must echo one
 *   (the first offer takes it, so the request stops waiting), and the transfers it finished: an
 *   offer or chunk of one of them is a replay;
 * - the device asked, the nonces of the requests it answered, declined or dropped: the same
 *   request again is a replay, not a new device asking.
 */
import { b64, randomBytes } from '../bytes.js';
import type { ConversationStore } from './store.js';
import { TRANSFER_KEEP_MS } from './transfer-types.js';

export const K_ASKED = 'transfer.asked';
export const K_FINISHED = 'transfer.finished';
export const K_ANSWERED = 'transfer.answered';

/** A request of this device that waits for an offer. */
interface Asked {
  nonce: string;
  at: number;
}

/** Requests this device keeps waiting on (asking again keeps the newest). */
const KEEP_ASKED = 4;
/** Transfer ids and answered nonces kept: far more than the transfers an account ever makes. */
const KEEP_IDS = 500;

const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

export class Freshness {
  private asked: Asked[] = [];
  private finished: string[] = [];
  private answered: string[] = [];

  constructor(
    private readonly store: ConversationStore,
    private readonly now: () => number,
  ) {}

  async read(): Promise<void> {
    const asked = await this.store.getMeta(K_ASKED);
    this.asked = Array.isArray(asked) ? (asked as Asked[]).filter((a) => typeof a?.nonce === 'string' && typeof a.at === 'number') : [];
    this.finished = strings(await this.store.getMeta(K_FINISHED));
    this.answered = strings(await this.store.getMeta(K_ANSWERED));
  }

  /** A new request of this device: its fresh nonce, waited on until an offer echoes it. */
  async ask(): Promise<string> {
    const nonce = b64(randomBytes(16));
    this.asked = [...this.asked, { nonce, at: this.now() }].slice(-KEEP_ASKED);
    await this.store.putMeta(K_ASKED, this.asked);
    return nonce;
  }

  /** Whether `nonce` is of a request this device still waits on (not older than a transfer is kept); it waits no more. */
  async take(nonce: string): Promise<boolean> {
    const a = this.asked.find((x) => x.nonce === nonce && x.at + TRANSFER_KEEP_MS >= this.now());
    if (!a) return false;
    this.asked = this.asked.filter((x) => x !== a);
    await this.store.putMeta(K_ASKED, this.asked);
    return true;
  }

  /** Whether `nonce` is of a request this device still waits on (without taking it). */
  waitsOn(nonce: string): boolean {
    return this.asked.some((x) => x.nonce === nonce && x.at + TRANSFER_KEEP_MS >= this.now());
  }

  isFinished(transfer: string): boolean {
    return this.finished.includes(transfer);
  }

  /** The transfer ended on this device (every chunk taken, or cancelled): nothing more of it is taken. */
  async finish(transfer: string): Promise<void> {
    if (this.isFinished(transfer)) return;
    this.finished = [...this.finished, transfer].slice(-KEEP_IDS);
    await this.store.putMeta(K_FINISHED, this.finished);
  }

  wasAnswered(nonce: string): boolean {
    return this.answered.includes(nonce);
  }

  async answer(nonces: string[]): Promise<void> {
    const fresh = nonces.filter((n) => !this.answered.includes(n));
    if (fresh.length === 0) return;
    this.answered = [...this.answered, ...fresh].slice(-KEEP_IDS);
    await this.store.putMeta(K_ANSWERED, this.answered);
  }
}
