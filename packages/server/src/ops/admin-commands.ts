/**
 * What the admin command does on a store, each action returning the text it prints. Output is
 * for people and simple scripts: one record a line, fields apart by two or more spaces. Nothing
 * printed here names an account: stats are counts only.
 */
import { randomBytes } from 'node:crypto';
import { encodeB64url } from '@svc/protocol';
import type { InviteRecord, Store } from '../store/types.js';

export async function createInvite(store: Store, uses: number, expiresInMs: number | null, now: number): Promise<string> {
  const code = encodeB64url(randomBytes(12));
  await store.createInvite(code, uses, expiresInMs === null ? null : now + expiresInMs, now);
  return `${code}\n`;
}

function inviteState(i: InviteRecord, now: number): string {
  if (i.usesLeft <= 0) return 'used-up';
  if (i.expiresAt !== null && i.expiresAt <= now) return 'expired';
  return 'active';
}

/** A header line, then one invite a line: code, uses left, expiry (ISO time or `never`), state. */
export async function listInvites(store: Store, now: number): Promise<string> {
  const rows = (await store.listInvites()).map((i) => [
    i.code,
    String(i.usesLeft),
    i.expiresAt === null ? 'never' : new Date(i.expiresAt).toISOString(),
    inviteState(i, now),
  ]);
  return table(['code', 'uses_left', 'expires', 'state'], rows);
}

export async function revokeInvite(store: Store, code: string): Promise<{ text: string; found: boolean }> {
  const found = await store.revokeInvite(code);
  return { found, text: found ? `revoked ${code}\n` : `no invite ${code}\n` };
}

export async function stats(store: Store): Promise<string> {
  const s = await store.stats();
  return table(
    ['what', 'count'],
    [
      ['accounts', String(s.accounts)],
      ['devices', String(s.devices)],
      ['rooms', String(s.rooms)],
      ['queued_envelopes', String(s.queuedEnvelopes)],
      ['push_subscriptions', String(s.pushSubscriptions)],
      ['attachments', String(s.attachments)],
      ['attachment_bytes', String(s.attachmentBytes)],
    ],
  );
}

/**
 * The purge the service runs every 10 minutes, now. Streams of the ended sessions, if the
 * service is running, close at its next request check or its own purge.
 */
export async function purge(store: Store, now: number, attachmentTtlMs: number): Promise<string> {
  const r = await store.purge(now, { attachmentTtlMs });
  return table(
    ['what', 'removed'],
    [
      ['idle_sessions', String(r.sessionIds.length)],
      ['envelopes', String(r.envelopes)],
      ['attachments', String(r.attachments)],
    ],
  );
}

function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, c) => Math.max(...all.map((r) => r[c]!.length)));
  return all.map((r) => r.map((v, c) => (c === r.length - 1 ? v : v.padEnd(widths[c]! + 2))).join('')).join('\n') + '\n';
}
