import { HeadAndTail } from '../../head-and-tail';

/** Output shaping shared by every tool: what the model sees is bounded and says what was cut. */

export interface CappedText {
  text: string;
  truncated: boolean;
}

/**
 * Keeps the head and the tail of `text` (the start shows what ran, the end shows how it ended) and
 * replaces the middle with a note naming how many characters and lines were dropped. The head
 * gets 60 % of `maxChars`, the tail the rest.
 */
export function capOutput(text: string, maxChars: number): CappedText {
  const headLength = Math.floor(maxChars * 0.6);
  const kept = new HeadAndTail<string>({ head: headLength, tail: Math.max(0, maxChars - headLength), slice: (chunk, start, end) => chunk.slice(start, end) });
  kept.push(text);
  if (kept.dropped === 0) return { text, truncated: false };
  const cut = text.slice(headLength, headLength + kept.dropped);
  const cutLines = cut.split('\n').length - 1;
  const note = `\n[... ${cut.length} characters (${cutLines} lines) cut from the middle of this output; narrow the request to see them ...]\n`;
  return { text: kept.head.join('') + note + kept.tail.join(''), truncated: true };
}

/** Cuts single very long lines (minified files, data blobs) so one line cannot flood the context. */
export function capLine(line: string, maxChars: number): string {
  return cappedLine(line.slice(0, maxChars), line.length, maxChars);
}

/** capLine for a line already cut to its first `maxChars` characters (`head`) whose full length is `length`. */
export function cappedLine(head: string, length: number, maxChars: number): string {
  return length <= maxChars ? head : `${head} [... ${length - maxChars} more characters on this line]`;
}
