/** Messages: the send path from the target rights on (docs/API.md), and acknowledgements. */
import { ApiError, LIMITS, ulidTime, type SendMessageRequest, type SendMessageResponse, type PushPayload } from '@svc/protocol';
import type { CallerFacts, SendTarget, TargetFacts } from '../store/types.js';
import type { Caller, Deps } from './deps.js';
import { requireOwnDevice, wellFormedDevice } from './devices.js';
import { sendRefusal } from '../rules/send.js';

export const PUSH_BODY = 'New message';

/**
 * The request pipeline, the parse and the shape checks come before; this is everything from the
 * target rights on, the delivery and the push.
 */
export async function sendMessage(deps: Deps, caller: Caller, req: SendMessageRequest): Promise<SendMessageResponse> {
  const now = deps.now();
  if (Math.abs(ulidTime(req.id) - now) > LIMITS.clockWindowMs) throw new ApiError('clock_skew');
  // A caller from a remembered session (deps.ts, `provisional`) has its session and X-Device read
  // by the send itself, with its facts; a malformed X-Device needs no read to be refused.
  const device = caller.provisional ? wellFormedDevice(caller.device) : await requireOwnDevice(deps, caller);
  // Steps 5 and 6 run inside the store's send, on the facts it reads (on PostgreSQL, under the
  // send's locks and in the same round trip), so a send costs no lookup of its own.
  const admit = async (facts: TargetFacts, read?: CallerFacts): Promise<void> => {
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
  const r = await deps.store.sendMessage(
    {
      id: req.id,
      from: caller.nick,
      to: req.to,
      keyId: req.keyId,
      iv: req.iv,
      ct: req.ct,
      senderDevice: device,
      now,
      ...(caller.provisional ? { session: caller.sessionId } : {}),
    },
    admit,
  );
  if ('error' in r) throw new ApiError(r.error);
  if (r.status === 'retry') return { id: r.id, ts: r.ts };

  const devices = r.targets.map((t) => t.deviceId);
  if (devices.length > 0) await deps.bus.deliver([{ devices, event: 'msg', data: r.json, id: r.envelope.id }]);
  // The push (docs/API.md) runs after the answer is decided and never delays it. Most sends
  // have no target that could be pushed: they build no push at all.
  const candidates = pushCandidates(caller.nick, r.targets);
  if (candidates.length > 0) {
    const payload: PushPayload =
      r.roomName !== null
        ? { title: `#${r.roomName}`, body: PUSH_BODY, chat: `room:${(r.envelope.to as { room: string }).room}` }
        : { title: `@${caller.nick}`, body: PUSH_BODY, chat: `dm:${caller.nick}` };
    void pushOffline(deps, candidates, payload).catch((err: unknown) => deps.log.error({ err }, 'push scheduling failed'));
  }
  return { id: r.envelope.id, ts: r.envelope.ts };
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

export async function ack(deps: Deps, caller: Caller, ids: string[]): Promise<void> {
  const device = await requireOwnDevice(deps, caller);
  await deps.store.ack(device, [...new Set(ids)]);
}
