import { forgeCode, visibleCharacters } from '../policy/neutralise';

/**
 * Text that someone other than the server wrote (the model's summary, the submitter's ticket
 * title, test names from the repository), made safe to put into a pull request and a commit.
 *
 * GitHub renders PR bodies as Markdown with HTML, mentions and autolinks, so that text could
 * notify anyone (`@olive`), load a tracking image, carry a `javascript:` link, or open an HTML
 * comment (`<!--`) that hides everything after it, including the server's Tests and Cost
 * sections. Here it keeps its Markdown structure (lists, emphasis, code) and loses every active
 * part:
 * - no raw HTML: `<` and `&` are written as entities (a comment or tag shows as text, and an
 *   entity such as `&#64;` cannot spell a mention);
 * - no mentions: `@name` gets a zero-width space after the `@` (as an entity, so the text holds
 *   no invisible character for the Trojan Source check to flag);
 * - no images: `![alt](url)` becomes a link to the image (if it is https) or plain text;
 * - only https links: any other link becomes its text with the address in a code span, and a
 *   bare `http://` is no autolink;
 * - code spans and fenced blocks are left as they are (nothing renders inside them);
 * - hidden characters (zero-width, bidi, TAG runs …) are written out everywhere (`<U+200B>`,
 *   `policy/neutralise.ts`), so the forge text holds none.
 *
 * Regexes over non-code segments rather than a Markdown parser: what matters is what each
 * character may become, and a segment outside code is rewritten character class by character
 * class; a parser's tree would have to be printed back to Markdown, which none of the
 * well-kept parsers do faithfully.
 */

const ZERO_WIDTH_SPACE = '&#8203;';

/** Code-span delimiters in a line: runs of backticks, paired with the next run of the same length. */
function splitCodeSpans(line: string): Array<{ code: boolean; text: string }> {
  const parts: Array<{ code: boolean; text: string }> = [];
  let cursor = 0;
  const runs = [...line.matchAll(/`+/g)];
  for (let i = 0; i < runs.length; i += 1) {
    const open = runs[i]!;
    if (open.index < cursor) continue;
    const close = runs.slice(i + 1).find((run) => run[0].length === open[0].length);
    if (!close) continue;
    parts.push({ code: false, text: line.slice(cursor, open.index) });
    parts.push({ code: true, text: line.slice(open.index, close.index + close[0].length) });
    cursor = close.index + close[0].length;
    i = runs.indexOf(close);
  }
  parts.push({ code: false, text: line.slice(cursor) });
  return parts;
}

function isHttps(url: string): boolean {
  return /^https:\/\/[^\s<>"']+$/i.test(url);
}

/** A code span holding `text` whatever backticks it contains, hidden characters written out. */
export function codeSpan(text: string): string {
  return forgeCode(text);
}

/** One stretch of prose (no code in it) with its active parts taken out. */
function neutralizeProse(text: string): string {
  // Links and images first, each replaced by a placeholder (kept apart from the rewriting below).
  const made: string[] = [];
  const hold = (markdown: string) => `\u0000${made.push(markdown) - 1}\u0000`;
  const clean = (label: string) => rewrite(label.replace(/\u0000/g, ''));
  let out = text.replace(/\u0000/g, '').replace(/(!?)\[([^\]\n]*)\]\(\s*([^)\s]*)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g, (_whole, bang: string, label: string, url: string) => {
    const shown = clean(bang ? `image: ${label || 'no description'}` : label || url);
    return hold(isHttps(url) ? `[${shown}](${url})` : `${shown} (${codeSpan(url)})`);
  });
  // A link reference definition ([x]: url) for anything but https becomes plain text.
  out = out.replace(/^(\s{0,3})\[([^\]\n]+)\]:\s*(\S+)/, (whole, indent: string, label: string, url: string) => (isHttps(url) ? hold(whole) : hold(`${indent}\\[${clean(label)}\\]: ${codeSpan(url)}`)));
  out = rewrite(out);
  return out.replace(/\u0000(\d+)\u0000/g, (_whole, index: string) => made[Number(index)] ?? '');
}

/** HTML, entities, autolinks and mentions out of plain prose. */
function rewrite(text: string): string {
  let out = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  // Plain-text addresses GitHub would autolink: only https stays a link.
  out = out.replace(/\b(http|ftp|mailto|javascript|data|vbscript|file):/gi, (_whole, scheme: string) => `${scheme}&#58;`);
  out = out.replace(/\bwww\./gi, (www: string) => `${www.slice(0, 3)}&#46;`);
  // Mentions (`@user`, `@org/team`) and any `@` that could start one.
  return out.replace(/@(?=[A-Za-z0-9_-])/g, `@${ZERO_WIDTH_SPACE}`);
}

/** Lines that would be commit trailers (`Signed-off-by:`, `Reviewed-by:`, `Co-authored-by:` …). */
const TRAILER = /^\s*(?:[A-Za-z][A-Za-z0-9]*-)*(?:by|Cc|Fixes|Closes|Resolves|Change-Id|Bug|Link|Trailer)\s*:/i;

/** Model or submitter text for a PR body, Markdown kept, mentions, HTML, images and non-https links removed. */
export function neutralizeMarkdown(text: string): string {
  const out: string[] = [];
  let fence: string | undefined;
  for (const line of visibleCharacters(text.replace(/\r\n?/g, '\n')).split('\n')) {
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence !== undefined) {
      out.push(line);
      if (marker && marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
      continue;
    }
    if (marker) {
      fence = marker;
      out.push(line);
      continue;
    }
    out.push(splitCodeSpans(line).map((part) => (part.code ? part.text : neutralizeProse(part.text))).join(''));
  }
  // A fence the text never closes is closed here, so it cannot swallow what follows.
  if (fence !== undefined) out.push(fence);
  return out.join('\n');
}

/** One line of someone else's text (a ticket title) for a PR body: no line breaks, nothing active. */
export function neutralizeInline(text: string): string {
  return neutralizeMarkdown(text.replace(/[\r\n]+/g, ' ').trim()).replace(/^(\s*)([#>|=-]|\d+[.)]|[*+]\s)/, '$1\\$2');
}

/** `text` as a Markdown block quote (every line), so it reads as quoted and ends where the quote ends. */
export function quoted(text: string): string {
  return text.split('\n').map((line) => (line === '' ? '>' : `> ${line}`)).join('\n');
}

/**
 * Model or submitter text for a commit message: trailer-shaped lines dropped (trailers come only
 * from the server: `Co-authored-by` for the requester), no NUL or carriage return, hidden
 * characters written out.
 */
export function commitText(text: string): string {
  return visibleCharacters(text)
    .replace(/\r\n?/g, '\n')
    .replace(/\0/g, '')
    .split('\n')
    .filter((line) => !TRAILER.test(line))
    .join('\n');
}
