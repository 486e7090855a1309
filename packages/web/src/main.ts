/**
 * Entry point: register the service worker, read the service's configuration, reopen the account
 * this browser is signed in to (or show the sign-in screen), and follow the hash route. Offline,
 * the service worker serves the app and the account opens from what this browser stores.
 */
import './styles.css';
import { ApiClient } from '@svc/sdk';
import { deviceGone, forgetLocalKeys, isLockedNow, lock, lockedElsewhere, resume, signOut, signOutLocked, type Resumed } from './app/account.js';
import { describeError } from './app/errors.js';
import { onOpenChatRequest, registerServiceWorker } from './app/push.js';
import { go, isChatId, parseRoute } from './app/route.js';
import type { EndReason, Session } from './app/session.js';
import { keepChats } from './app/chatcache.js';
import { connect } from './app/connection.js';
import { forgetAllMedia } from './app/media.js';
import { onTabs, tellTabs, tellWorker, watchIdle } from './app/lock.js';
import { LOCKED_TITLE, SIGN_IN_TITLE, trackTitle } from './app/title.js';
import { authView } from './components/auth.js';
import { lockView } from './components/lock.js';
import { clear, h } from './components/dom.js';
import { shellView, type ShellView } from './components/shell.js';

const root = document.getElementById('app')!;
let registration: 'open' | 'invite' = 'open';
let shell: ShellView | null = null;
let stopSync: (() => Promise<void>) | null = null;
/** The route when the app locked (it may name a chat), shown again once it is unlocked. */
let lockedRoute: string | null = null;

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
  closeDialogs();
  await stopSync?.().catch(() => undefined);
  stopSync = null;
  s.close();
  if (reason === 'signed_out') await signOut(s).catch(() => forgetLocalKeys(s));
  else if (reason === 'device_removed') await deviceGone(s);
  else if (reason === 'session_ended') await forgetLocalKeys(s);
  showAuth(END_NOTICE[reason], reason === 'account_deleted' ? null : s.nick);
}

/**
 * Closes every dialog: a modal one (a photo, the camera of "Scan code", a question) lives outside
 * the app's root, in the top layer, and would stay over the lock or sign-in screen. Each one's
 * own close handler lets go of what it holds.
 */
function closeDialogs(): void {
  for (const d of document.querySelectorAll('dialog')) {
    if (d.open) d.close();
    if (!root.contains(d)) d.remove();
  }
}

/**
 * Locks the app: the event stream closes (the service queues what comes meanwhile), the saved
 * session loses its private key, and the Session with every key and record in memory is dropped;
 * the page then shows only the lock screen, and the route (which may name a chat) is put away.
 */
async function lockApp(s: Session, fromTab = false): Promise<void> {
  // First: a push that arrives while the rest is put away shows no chat name.
  await tellWorker(true).catch(() => undefined);
  closeDialogs();
  forgetAllMedia();
  await stopSync?.().catch(() => undefined);
  stopSync = null;
  shell?.destroy();
  shell = null;
  clear(root);
  s.close();
  if (location.hash && location.hash !== '#/') {
    lockedRoute = location.hash;
    history.replaceState(null, '', '#/');
  }
  if (!fromTab) await lock(s).catch((e: unknown) => console.warn('locking:', e));
  else lockedElsewhere(s);
  if (!fromTab) tellTabs('lock');
  showLock();
}

function showLock(): void {
  shell?.destroy();
  shell = null;
  clear(root);
  document.title = LOCKED_TITLE;
  root.append(
    lockView({
      onUnlocked: (r) => {
        tellTabs('unlock');
        opened(r);
      },
      onSignOut: () => {
        void signOutLocked().then(() => {
          tellTabs('unlock');
          void tellWorker(false).catch(() => undefined);
          showAuth();
        });
      },
    }),
  );
}

/** What resume or unlock gave: the app, the lock screen, or the sign-in screen. */
function opened(r: Resumed): void {
  if (r.session) {
    void tellWorker(false).catch(() => undefined);
    if (lockedRoute) history.replaceState(null, '', lockedRoute);
    lockedRoute = null;
    return showMain(r.session, r.deviceReady);
  }
  if (r.locked) return showLock();
  showAuth(r.ended ? END_NOTICE.session_ended : null, r.nick);
}

function showMain(s: Session, deviceReady = true): void {
  let ended = false;
  const finish = (reason: EndReason) => {
    if (ended) return;
    ended = true;
    void end(s, reason);
  };
  const lockNow = (fromTab = false) => {
    if (ended) return;
    ended = true;
    void lockApp(s, fromTab);
  };
  clear(root);
  shell = shellView(s, { onSignOut: () => finish('signed_out'), onEnded: finish, onLock: () => lockNow() });
  root.append(shell.el);
  const connection = connect(s, { deviceReady });
  const stopTitle = trackTitle(s);
  const stopKeeping = keepChats(s);
  const stopIdle = watchIdle(() => lockNow());
  // Another tab locked the app: this one drops its keys too.
  const stopTabs = onTabs((what) => {
    if (what === 'lock') void isLockedNow().then((yes) => yes && lockNow(true));
  });
  stopSync = () => {
    stopIdle();
    stopTabs();
    stopTitle();
    stopKeeping();
    return connection.close();
  };
  shell.show(parseRoute(location.hash));
  s.publishChats();
  // The first search then finds the index in memory.
  s.search.warm();
}

window.addEventListener('hashchange', () => shell?.show(parseRoute(location.hash)));
// Unlocked (or signed out) in another tab: this one follows, from what is stored.
onTabs((what) => {
  if (what !== 'unlock' || shell) return;
  void resume()
    .then(opened)
    .catch(() => undefined);
});
onOpenChatRequest((chat) => {
  if (isChatId(chat)) go({ name: 'chat', chat });
});

async function boot(): Promise<void> {
  void registerServiceWorker();
  // Only the sign-in screen needs the configuration: a resume does not wait for it.
  const config = new ApiClient()
    .config()
    .then((c) => void (registration = c.registration))
    .catch(() => void (registration = 'open'));
  let r: Resumed;
  try {
    r = await resume();
  } catch (e) {
    await config;
    return showAuth(`Could not reopen your account: ${describeError(e)}`);
  }
  if (!r.session) await config;
  opened(r);
}

void boot().catch((e: unknown) => {
  clear(root);
  root.append(h('p', { class: 'boot error' }, `The app failed to start: ${describeError(e)}`));
});
