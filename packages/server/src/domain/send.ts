/**
 * What happens to a message, top to bottom (POST /api/messages, after the route table's parse
 * and shape checks). `sendMessage` reads as the pipeline; each stage is a function below it:
 *
 *   check    the request's own checks that need no stored fact: the clock window, then X-Device
 *            (a caller on a remembered session has its X-Device read by the send itself, with
 *            its session: http/remembered-sessions.ts);
 *   admit    the decision the store asks for inside its send transaction, given the facts it read
 *            under its locks (store/types.ts `Admit`): the caller confirmed, the target rights
 *            (rules/send.ts), then the message limit; it throws to refuse;
 *   write    the store stores what the same rules decided, in one transaction (batched behind
 *            the store: PostgreSQL's send-batch.ts puts the sends of one event-loop round in two
 *            round trips, SQLite's group-commit.ts their commits in one sync; the facts come from
 *            its read caches where it keeps them);
 *   deliver  one `msg` event for all target devices on the bus, live to every open stream;
 *   push     offline targets with a subscription get one Web Push, after the answer is decided
 *            and never delaying it;
 *   answer   `{id, ts}`, which the route layer sends only once the write is durable
 *            (domain/durability.ts, for every write route), or a 500 if it was lost.
 */
import { ApiError, LIMITS, ulidTime, type SendMessageRequest, type SendMessageResponse, type PushPayload } from '@svc/protocol';
import type { Admit, SendInput, SendQueued, SendTarget } from '../store/types.js';
import type { Caller, Deps } from './deps.js';
import { requireOwnDevice, wellFormedDevice } from './devices.js';
import { sendRefusal } from '../rules/send.js';

export const PUSH_BODY = 'New message';

export async function sendMessage(deps: Deps, caller: Caller, req: SendMessageRequest): Promise<SendMessageResponse> {
  const input = await check(deps, caller, req);
  const r = await deps.store.sendMessage(input, admit(deps, caller, req));
  if ('error' in r) throw new ApiError(r.error);
  // A used id of the same sender and time: answered as the first send was, nothing delivered again.
  if (r.status === 'retry') return { id: r.id, ts: r.ts };
  await deliver(deps, r);
  push(deps, caller, r);
  return { id: r.envelope.id, ts: r.envelope.ts };
}

/** The checks before any stored fact: the clock window, then the caller's device. */
async function check(deps: Deps, caller: Caller, req: SendMessageRequest): Promise<SendInput> {
  const now = deps.now();
  if (Math.abs(ulidTime(req.id) - now) > LIMITS.clockWindowMs) throw new ApiError('clock_skew');
  // A malformed X-Device needs no read to be refused; a remembered session's device is read by
  // the send, with the facts.
  const device = caller.provisional ? wellFormedDevice(caller.device) : await requireOwnDevice(deps, caller);
  return {
    id: req.id,
    from: caller.nick,
    to: req.to,
    keyId: req.keyId,
    iv: req.iv,
    ct: req.ct,
    senderDevice: device,
    now,
    ...(caller.provisional ? { session: caller.sessionId } : {}),
  };
}

/**
 * The decision inside the store's send: steps 5 and 6 run on the facts the store read (on
 * PostgreSQL under the send's locks and in the same round trip), so a send costs no lookup of
 * its own.
 */
function admit(deps: Deps, caller: Caller, req: SendMessageRequest): Admit {
  return async (facts, read) => {
    if (caller.provisional) {
      // The session check, then step 4 (X-Device), as the request would have run them.
      if (read?.sessionNick !== caller.nick) throw new ApiError('unauthenticated');
      if (read.deviceOwner !== caller.nick) throw new ApiError('unknown_device');
    }
    const refused = sendRefusal(caller.nick, req.to, facts);
    if (refused) throw new ApiError(refused.error);
    const wait = await deps.limiter.hit(`msg:${caller.nick}`, deps.config.rates.messagesPerMin, 60_000);
    if (wait > 0) throw new ApiError('rate_limited', { retryAfter: wait });
  };
}

/** One `msg` event for every target device, serialised once. */
async function deliver(deps: Deps, r: SendQueued): Promise<void> {
  const devices = r.targets.map((t) => t.deviceId);
  if (devices.length > 0) await deps.bus.deliver([{ devices, event: 'msg', data: r.json, id: r.envelope.id }]);
}

/** Schedules the push (docs/API.md); most sends have no target that could be pushed and build none. */
function push(deps: Deps, caller: Caller, r: SendQueued): void {
  const candidates = pushCandidates(caller.nick, r.targets);
  if (candidates.length === 0) return;
  const payload: PushPayload =
    r.roomName !== null
      ? { title: `#${r.roomName}`, body: PUSH_BODY, chat: `room:${(r.envelope.to as { room: string }).room}` }
      : { title: `@${caller.nick}`, body: PUSH_BODY, chat: `dm:${caller.nick}` };
  void pushOffline(deps, candidates, payload).catch((err: unknown) => deps.log.error({ err }, 'push scheduling failed'));
}

/** The targets a push could reach: another account's devices with a subscription and no push pending. */
function pushCandidates(sender: string, targets: readonly SendTarget[]): string[] {
  const out: string[] = [];
  for (const t of targets) if (t.pushable && t.nick !== sender) out.push(t.deviceId);
  return out;
}

/**
 * Claims push-pending for the offline ones of the candidates and hands those to the pusher. Only
 * targets that could be claimed at all are looked up (presence may cost a Redis round trip);
 * the claim itself re-checks subscription and pending flag atomically.
 */
async function pushOffline(deps: Deps, candidates: string[], payload: PushPayload): Promise<void> {
  const online = await deps.bus.onlineDevices(candidates);
  const offline = candidates.filter((d) => !online.has(d));
  if (offline.length === 0) return;
  const claimed = await deps.store.claimPush(offline);
  if (claimed.length > 0) deps.pusher.enqueue(claimed, payload);
}
