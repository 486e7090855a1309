/**
 * Keeps this device connected. After an offline start the device is registered first
 * (POST /api/devices is idempotent), retried with backoff until the service answers; then the
 * event stream runs (sync.ts). When the browser says the network is back, a pending retry of
 * either happens at once instead of waiting out its backoff.
 */
import { isSdkError, type EventStream } from '@svc/sdk';
import { describeError } from './errors.js';
import type { Session } from './session.js';
import { startSync } from './sync.js';

export interface Connection {
  close(): Promise<void>;
}

const BACKOFF = { initial: 1000, max: 30_000 };

export function connect(session: Session, options: { deviceReady: boolean }): Connection {
  let stream: EventStream | null = null;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let attempt = 0;
  let closed = false;
  let told = false;

  const setConn = (state: 'connecting' | 'offline') => session.connectionChanged(state);

  const later = () => {
    setConn('offline');
    const base = Math.min(BACKOFF.max, BACKOFF.initial * 2 ** attempt++);
    timer = setTimeout(() => void registerDevice(), Math.round(base / 2 + Math.random() * (base / 2)));
  };

  const registerDevice = async (): Promise<void> => {
    timer = null;
    if (closed) return;
    // Without a network the request cannot succeed; the `online` event (or the timer) comes back.
    if (!navigator.onLine) return later();
    setConn('connecting');
    try {
      await session.messenger.ensureDevice(session.deviceId);
    } catch (error) {
      if (closed) return;
      if (isSdkError(error, 'unauthenticated')) return void session.endedByService('session_ended');
      // A refusal other than the network is worth saying once; retrying may still clear it.
      if (!isSdkError(error, 'network') && !told) {
        told = true;
        session.reportProblem(`This device could not be registered: ${describeError(error)}`);
      }
      return later();
    }
    if (!closed) stream = startSync(session);
  };

  const onOnline = () => {
    if (stream) return stream.reconnectNow();
    if (timer) {
      clearTimeout(timer);
      attempt = 0;
      void registerDevice();
    }
  };
  window.addEventListener('online', onOnline);

  if (options.deviceReady) stream = startSync(session);
  else void registerDevice();

  return {
    async close() {
      closed = true;
      window.removeEventListener('online', onOnline);
      if (timer) clearTimeout(timer);
      await stream?.close();
    },
  };
}
