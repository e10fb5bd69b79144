/** Output shaping shared by every tool: what the model sees is bounded and says what was cut. */

export interface CappedText {
  text: string;
  truncated: boolean;
}

/**
 * Keeps the head and the tail of `text` (the start shows what ran, the end shows how it ended) and
 * replaces the middle with a note naming how many characters and lines were dropped.
 */
export function capOutput(text: string, maxChars: number): CappedText {
  if (text.length <= maxChars) return { text, truncated: false };
  const headLength = Math.floor(maxChars * 0.6);
  const tailLength = Math.max(0, maxChars - headLength);
  const head = text.slice(0, headLength);
  const tail = tailLength > 0 ? text.slice(text.length - tailLength) : '';
  const cut = text.slice(headLength, text.length - tailLength);
  const cutLines = cut.split('\n').length - 1;
  const note = `\n[... ${cut.length} characters (${cutLines} lines) cut from the middle of this output; narrow the request to see them ...]\n`;
  return { text: head + note + tail, truncated: true };
}

/** Cuts single very long lines (minified files, data blobs) so one line cannot flood the context. */
export function capLine(line: string, maxChars: number): string {
  if (line.length <= maxChars) return line;
  return `${line.slice(0, maxChars)} [... ${line.length - maxChars} more characters on this line]`;
}
