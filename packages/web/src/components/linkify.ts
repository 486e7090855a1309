/**
 * A message's text as DOM nodes: http and https links become links that open in a new tab with
 * rel="noopener noreferrer"; everything else stays text nodes, so nothing in a message ever
 * becomes markup (no innerHTML anywhere).
 */
import { h } from './dom.js';

/** A URL runs to the next space; trailing punctuation of the sentence is not part of it. */
const URL_RE = /\bhttps?:\/\/[^\s<>"]+/gi;
const TRAILING = /[.,;:!?'")\]}]+$/;

export function linkify(text: string): Node[] {
  const out: Node[] = [];
  let last = 0;
  for (const match of text.matchAll(URL_RE)) {
    let url = match[0];
    const trail = TRAILING.exec(url);
    if (trail) url = url.slice(0, url.length - trail[0].length);
    const at = match.index ?? 0;
    let parsed: URL | null;
    try {
      parsed = new URL(url);
    } catch {
      parsed = null;
    }
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) continue;
    if (at > last) out.push(document.createTextNode(text.slice(last, at)));
    out.push(h('a', { href: parsed.href, target: '_blank', rel: 'noopener noreferrer' }, url));
    last = at + url.length;
  }
  if (last < text.length) out.push(document.createTextNode(text.slice(last)));
  return out;
}
