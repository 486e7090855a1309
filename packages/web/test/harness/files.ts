/** Attaching, sending and downloading files through the composer, as a person would. */
import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { button, messageBox, messageLog } from './ui.js';

export interface FileSpec {
  name: string;
  mimeType: string;
  buffer: Buffer;
}

export function attachInput(page: Page) {
  return page.getByLabel('Attach file', { exact: true });
}

/** Attaches `files` with the paperclip, types the caption and sends. */
export async function sendFiles(page: Page, files: FileSpec[], caption = ''): Promise<void> {
  await attachInput(page).setInputFiles(files);
  for (const f of files) await page.getByRole('list', { name: 'Attachments' }).getByText(f.name, { exact: true }).waitFor();
  if (caption) await messageBox(page).fill(caption);
  await button(page, 'Send').click();
}

/** Clicks "Download <name>" in the open chat and returns the bytes saved. */
export async function download(page: Page, name: string): Promise<Buffer> {
  const [d] = await Promise.all([
    page.waitForEvent('download', { timeout: 60_000 }),
    messageLog(page)
      .getByRole('button', { name: `Download ${name}`, exact: true })
      .first()
      .click(),
  ]);
  const path = await d.path();
  if (!path) throw new Error(`the download of ${name} failed: ${await d.failure()}`);
  return readFile(path);
}

/** Pastes `files` into the composer's textbox, as the clipboard would. */
export async function pasteFiles(page: Page, files: FileSpec[]): Promise<void> {
  const data = files.map((f) => ({ name: f.name, type: f.mimeType, bytes: [...f.buffer] }));
  await messageBox(page).evaluate((el, list) => {
    const dt = new DataTransfer();
    for (const f of list) dt.items.add(new File([new Uint8Array(f.bytes)], f.name, { type: f.type }));
    el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
  }, data);
}

/** Drops `files` onto the open chat, as a drag from the desktop would. */
export async function dropFiles(page: Page, files: FileSpec[]): Promise<void> {
  const data = files.map((f) => ({ name: f.name, type: f.mimeType, bytes: [...f.buffer] }));
  await messageLog(page).evaluate((el, list) => {
    const dt = new DataTransfer();
    for (const f of list) dt.items.add(new File([new Uint8Array(f.bytes)], f.name, { type: f.type }));
    el.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
    el.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  }, data);
}
