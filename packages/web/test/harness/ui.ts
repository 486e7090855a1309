/**
 * What a person does in the web client, by the accessible names of docs/WEB.md ("Screens") and nothing else
 * (no CSS selectors, no test ids), so these steps hold whatever the DOM looks like.
 */
import type { Locator, Page } from 'playwright-core';
import { PATIENCE } from './wait.js';

/** Argon2id with the app's defaults takes about a second; leave room for a busy machine. */
export const KDF_PATIENCE = 60_000;

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A name that starts with `text` as a whole word, so "bob" never matches "bobby" (an entry may add an unread count). */
function startsWith(text: string): RegExp {
  return new RegExp(`^\\s*${escape(text)}(?![\\w])`);
}

export function chatList(page: Page): Locator {
  return page.getByRole('navigation', { name: 'Chats' });
}

/** The chat-list entry for a peer's nick or a room's name, whatever role the app gives entries. */
export function chatEntry(page: Page, name: string): Locator {
  const nav = chatList(page);
  const n = startsWith(name);
  return nav
    .getByRole('link', { name: n })
    .or(nav.getByRole('button', { name: n }))
    .or(nav.getByRole('tab', { name: n }))
    .or(nav.getByRole('option', { name: n }))
    .first();
}

export function messageLog(page: Page): Locator {
  return page.getByRole('log').first();
}

export function messageBox(page: Page): Locator {
  return page.getByRole('textbox', { name: 'Message', exact: true });
}

export function button(page: Page, name: string): Locator {
  return page.getByRole('button', { name, exact: true });
}

export function nickInput(page: Page): Locator {
  return page.getByRole('textbox', { name: 'Nick', exact: true });
}

/** Password fields have no ARIA role, so they are found by label; only the visible one counts. */
export function passwordInput(page: Page): Locator {
  return page.getByLabel('Password', { exact: true }).filter({ visible: true });
}

async function signedIn(page: Page): Promise<void> {
  await chatList(page).waitFor({ timeout: KDF_PATIENCE });
}

/** The sign-up form's repeat of the password ("Sign in" ignores it). */
export function confirmPasswordInput(page: Page): Locator {
  return page.getByLabel('Confirm password', { exact: true }).filter({ visible: true });
}

/** Creates an account; the password must pass the sign-up rule (8+ characters, zxcvbn score 2+). */
export async function signUp(page: Page, nick: string, password: string): Promise<void> {
  if (!page.url().startsWith('http')) await page.goto('/');
  await nickInput(page).fill(nick);
  await passwordInput(page).fill(password);
  await confirmPasswordInput(page).fill(password);
  await button(page, 'Create account').click();
  await signedIn(page);
}

export async function signIn(page: Page, nick: string, password: string): Promise<void> {
  if (!page.url().startsWith('http')) await page.goto('/');
  await nickInput(page).fill(nick);
  await passwordInput(page).fill(password);
  await button(page, 'Sign in').click();
  await signedIn(page);
}

/** After a reload the app either restores the session by itself or asks for the password again. */
export async function ensureSignedIn(page: Page, nick: string, password: string): Promise<void> {
  const signInButton = button(page, 'Sign in');
  await chatList(page).or(signInButton).first().waitFor({ timeout: KDF_PATIENCE });
  if (await signInButton.isVisible()) await signIn(page, nick, password);
}

export async function openChat(page: Page, name: string): Promise<void> {
  await chatEntry(page, name).click();
  await messageBox(page).waitFor();
}

export async function startChat(page: Page, nick: string): Promise<void> {
  await button(page, 'New chat').click();
  await nickInput(page).fill(nick);
  await button(page, 'Start chat').click();
  await chatEntry(page, nick).waitFor();
  await messageBox(page).waitFor();
}

export async function createRoom(page: Page, name: string, members: string[]): Promise<void> {
  await button(page, 'New room').click();
  await page.getByRole('textbox', { name: 'Room name', exact: true }).fill(name);
  await page.getByRole('textbox', { name: 'Members', exact: true }).fill(members.join(', '));
  await button(page, 'Create room').click();
  await chatEntry(page, name).waitFor();
  await messageBox(page).waitFor();
}

/** Waits until `text` shows in the open conversation's message list. */
export async function seeMessage(page: Page, text: string, timeout = PATIENCE): Promise<void> {
  await messageLog(page).getByText(text).first().waitFor({ timeout });
}

/** Types and sends `text` in the open conversation, and waits for it to show as sent. */
export async function send(page: Page, text: string): Promise<void> {
  await messageBox(page).fill(text);
  await button(page, 'Send').click();
  await seeMessage(page, text);
}

/** Whether `text` shows anywhere on the page right now. */
export async function shows(page: Page, text: string): Promise<boolean> {
  return (await page.getByText(text).count()) > 0;
}

/** The sign-in form is back: the app noticed its session ended. */
export async function signedOut(page: Page, timeout = 30_000): Promise<void> {
  await button(page, 'Sign in').waitFor({ timeout });
}

/**
 * Changes the password under "Settings". Only the button "Settings" is matched exactly; the form's
 * labels are matched loosely, so a rewording of the form does not break the step: a "current"
 * password field, a "new" one, an optional repeat, and a button that changes or saves.
 */
export async function changePassword(page: Page, current: string, next: string): Promise<void> {
  await button(page, 'Settings').click();
  const field = (re: RegExp) => page.getByLabel(re).filter({ visible: true }).first();
  const currentField = field(/^(current|old) password$/i);
  await currentField.fill(current);
  await field(/^new password$/i).fill(next);
  const repeat = page.getByLabel(/^(repeat|confirm) (the )?new password$|^new password again$/i).filter({ visible: true });
  if ((await repeat.count()) > 0) await repeat.first().fill(next);
  await page
    .getByRole('button', { name: /^(change|save|update) password$/i })
    .first()
    .click();
  // Done when the form lets go of the old password (cleared or closed); two key derivations run first.
  await page.waitForFunction((el) => !el || !el.isConnected || (el as HTMLInputElement).value === '', await currentField.elementHandle(), {
    timeout: KDF_PATIENCE,
  });
}

/** Confirms an in-page confirmation step if the app shows one after a destructive click. */
async function confirmIfAsked(page: Page, name: RegExp): Promise<void> {
  const dialog = page.getByRole('alertdialog').or(page.getByRole('dialog')).filter({ hasText: name }).last();
  const confirm = dialog.getByRole('button', { name });
  try {
    await confirm.waitFor({ timeout: 1_000 });
  } catch {
    return; // no confirmation step
  }
  await confirm.click();
}

/** Opens the open room's settings. */
export async function openRoomSettings(page: Page): Promise<void> {
  await button(page, 'Room settings').click();
}

/** The owner removes `member` from the open room, under "Room settings". */
export async function removeMember(page: Page, member: string): Promise<void> {
  await openRoomSettings(page);
  const n = escape(member);
  await page
    .getByRole('button', { name: new RegExp(`remove.*${n}|${n}.*remove`, 'i') })
    .first()
    .click();
  await confirmIfAsked(page, /remove/i);
}

/** Leaves the open room, under "Room settings". */
export async function leaveRoom(page: Page): Promise<void> {
  await openRoomSettings(page);
  await button(page, 'Leave room').click();
  await confirmIfAsked(page, /leave/i);
}

// ---- one message of the open chat: its actions, reactions and status ----

/**
 * The `listitem` of the open chat's log that holds `text`: the first one, so a message comes
 * before any reply that quotes it.
 */
export function messageItem(page: Page, text: string): Locator {
  return messageLog(page).getByRole('listitem').filter({ hasText: text }).first();
}

/** Opens the "Message actions" menu of the message holding `text`. */
export async function openActions(page: Page, text: string): Promise<Locator> {
  await messageItem(page, text).getByRole('button', { name: 'Message actions', exact: true }).click();
  const menu = page.getByRole('menu', { name: 'Message actions' });
  await menu.waitFor();
  return menu;
}

/** The names of the menu items offered on the message holding `text` (the menu is closed again). */
export async function actionsOffered(page: Page, text: string): Promise<string[]> {
  const menu = await openActions(page, text);
  const names = (await menu.getByRole('menuitem').allInnerTexts()).map((n) => n.trim());
  await page.keyboard.press('Escape');
  await menu.waitFor({ state: 'detached' });
  return names;
}

/** Chooses `action` ("Reply", "React", "Edit", "Delete for everyone") on the message holding `text`. */
export async function chooseAction(page: Page, text: string, action: string): Promise<void> {
  const menu = await openActions(page, text);
  await menu.getByRole('menuitem', { name: action, exact: true }).click();
}

/** Reacts with `emoji` to the message holding `text`, through "Message actions" → "React". */
export async function react(page: Page, text: string, emoji: string): Promise<void> {
  await chooseAction(page, text, 'React');
  await page.getByRole('group', { name: 'React', exact: true }).getByRole('button', { name: emoji, exact: true }).click();
}

/** A reaction under the message holding `text`, by its name: the emoji and the count ("👍 2"). */
export function reaction(page: Page, text: string, name: string): Locator {
  return messageItem(page, text).getByRole('button', { name, exact: true });
}

/** The status of one's own message holding `text` ("Sending", "Sent", "Delivered", "Read"…). */
export function messageStatus(page: Page, text: string): Locator {
  return messageItem(page, text).getByRole('status');
}

/** Waits until one's own message holding `text` shows the status `name`. */
export async function statusShows(page: Page, text: string, name: string | RegExp, timeout = PATIENCE): Promise<void> {
  await messageItem(page, text)
    .getByRole('status', { name, exact: typeof name === 'string' })
    .waitFor({ timeout });
}

/** The "Search messages" searchbox of the sidebar. */
export function searchBox(page: Page): Locator {
  return page.getByRole('search').getByRole('searchbox', { name: 'Search messages', exact: true });
}

/** The buttons of the list "Search results". */
export function searchResults(page: Page): Locator {
  return page.getByRole('list', { name: 'Search results', exact: true }).getByRole('button');
}
