/**
 * Entry point: register the service worker, read the service's configuration, reopen the account
 * this browser is signed in to (or show the sign-in screen), and follow the hash route. Offline,
 * the service worker serves the app and the account opens from what this browser stores.
 */
import './styles.css';
import { ApiClient } from '@svc/sdk';
import { deviceGone, forgetLocalKeys, resume, signOut } from './app/account.js';
import { describeError } from './app/errors.js';
import { onOpenChatRequest, registerServiceWorker } from './app/push.js';
import { go, isChatId, parseRoute } from './app/route.js';
import type { EndReason, Session } from './app/session.js';
import { keepChats } from './app/chatcache.js';
import { connect } from './app/connection.js';
import { SIGN_IN_TITLE, trackTitle } from './app/title.js';
import { authView } from './components/auth.js';
import { clear, h } from './components/dom.js';
import { shellView, type ShellView } from './components/shell.js';

const root = document.getElementById('app')!;
let registration: 'open' | 'invite' = 'open';
let shell: ShellView | null = null;
let stopSync: (() => Promise<void>) | null = null;

const END_NOTICE: Record<EndReason, string | null> = {
  signed_out: null,
  session_ended: 'Your session ended (the password was changed or you were signed out elsewhere). Sign in again.',
  device_removed: 'This device was removed from the account. Sign in to add it again.',
  account_deleted: 'The account was deleted.',
};

function showAuth(notice: string | null = null, nick: string | null = null): void {
  shell?.destroy();
  shell = null;
  clear(root);
  root.append(authView({ registration, notice, nick, onSession: showMain }));
  document.title = SIGN_IN_TITLE;
}

async function end(s: Session, reason: EndReason): Promise<void> {
  await stopSync?.().catch(() => undefined);
  stopSync = null;
  s.close();
  if (reason === 'signed_out') await signOut(s).catch(() => forgetLocalKeys(s));
  else if (reason === 'device_removed') await deviceGone(s);
  else if (reason === 'session_ended') await forgetLocalKeys(s);
  showAuth(END_NOTICE[reason], reason === 'account_deleted' ? null : s.nick);
}

function showMain(s: Session, deviceReady = true): void {
  let ended = false;
  const finish = (reason: EndReason) => {
    if (ended) return;
    ended = true;
    void end(s, reason);
  };
  clear(root);
  shell = shellView(s, { onSignOut: () => finish('signed_out'), onEnded: finish });
  root.append(shell.el);
  const connection = connect(s, { deviceReady });
  const stopTitle = trackTitle(s);
  const stopKeeping = keepChats(s);
  stopSync = () => {
    stopTitle();
    stopKeeping();
    return connection.close();
  };
  shell.show(parseRoute(location.hash));
  s.publishChats();
}

window.addEventListener('hashchange', () => shell?.show(parseRoute(location.hash)));
onOpenChatRequest((chat) => {
  if (isChatId(chat)) go({ name: 'chat', chat });
});

async function boot(): Promise<void> {
  void registerServiceWorker();
  try {
    registration = (await new ApiClient().config()).registration;
  } catch {
    registration = 'open';
  }
  try {
    const r = await resume();
    if (r.session) return showMain(r.session, r.deviceReady);
    showAuth(r.ended ? END_NOTICE.session_ended : null, r.nick);
  } catch (e) {
    showAuth(`Could not reopen your account: ${describeError(e)}`);
  }
}

void boot().catch((e: unknown) => {
  clear(root);
  root.append(h('p', { class: 'boot error' }, `The app failed to start: ${describeError(e)}`));
});
