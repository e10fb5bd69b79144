/**
 * A ticket as both the model and the person see it. Text that renders invisibly in a forge or an
 * editor (bidi controls and zero-width characters, HTML comments, Markdown link-definition
 * comments) is where a hostile ticket hides instructions; written out visibly, the model reads
 * nothing the requester cannot see, and the side panel can show the same text.
 *
 * Pure string functions (no runtime imports), so the server, the extension and the webview share
 * one rendering.
 */

/** Bidi controls (CVE-2021-42574's set plus the marks) and zero-width characters. */
const INVISIBLE = /[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;

const HTML_COMMENT = /<!--([\s\S]*?)(?:-->|$)/g;
/** `[//]: # (text)` and `[comment]: <> (text)`: Markdown that renders as nothing. */
const MARKDOWN_COMMENT = /^\[[^\]\n]*\]:\s*(?:#|<>)\s*(?:\(([^\n]*)\)|"([^\n]*)"|'([^\n]*)')\s*$/gm;

function codePoint(char: string): string {
  return `<U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}>`;
}

/** Each invisible character written as `<U+202E>`. */
export function escapeInvisibleCharacters(text: string): string {
  return text.replace(INVISIBLE, codePoint);
}

/** Does the text hold anything a renderer would hide? */
export function hasHiddenTicketContent(text: string): boolean {
  INVISIBLE.lastIndex = 0;
  HTML_COMMENT.lastIndex = 0;
  MARKDOWN_COMMENT.lastIndex = 0;
  return INVISIBLE.test(text) || HTML_COMMENT.test(text) || MARKDOWN_COMMENT.test(text);
}

/**
 * The ticket text with hidden parts shown as such: `<!-- x -->` becomes
 * `[hidden HTML comment in the ticket: x]`, a Markdown comment line
 * `[hidden Markdown comment in the ticket: x]`, and invisible characters `<U+XXXX>`.
 */
export function visibleTicketText(text: string): string {
  return escapeInvisibleCharacters(
    text
      .replace(HTML_COMMENT, (_match, inner: string) => `[hidden HTML comment in the ticket: ${inner.trim()}]`)
      .replace(MARKDOWN_COMMENT, (_match, a?: string, b?: string, c?: string) => `[hidden Markdown comment in the ticket: ${(a ?? b ?? c ?? '').trim()}]`),
  );
}

/**
 * The text with what a renderer hides taken out (HTML comments, Markdown comments, invisible
 * characters): what a reviewer saw of a PR comment, so hidden instructions in it never reach the
 * model. Tickets are shown marked (`visibleTicketText`); a comment is steering on a diff, where a
 * hidden part has no reason to be followed at all.
 */
export function withoutHiddenContent(text: string): string {
  return text.replace(HTML_COMMENT, '').replace(MARKDOWN_COMMENT, '').replace(INVISIBLE, '');
}
