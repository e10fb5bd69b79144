/**
 * Invisible and bidirectional control characters: text that a reader sees one way and a compiler
 * or a model reads another. One classification for the diff's Trojan Source check (`check.ts`),
 * the outbound text gate (`outbound.ts`) and the text neutraliser (`neutralise.ts`):
 * - the bidi controls of CVE-2021-42574 (U+202A–U+202E embeddings and overrides, U+2066–U+2069
 *   isolates) plus U+200E/U+200F marks and U+061C;
 * - zero-width and other default-ignorable characters that hide content or split identifiers:
 *   U+200B–U+200D, U+2060–U+2064 (word joiner, invisible math operators), U+206A–U+206F,
 *   U+FEFF anywhere but a file's first character (there it is a byte-order mark), U+00AD soft
 *   hyphen, U+034F combining grapheme joiner, U+180E, U+17B4/U+17B5, U+FFF9–U+FFFB, U+1D173–U+1D17A;
 * - the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0): blank letters that make invisible
 *   identifiers;
 * - U+2028/U+2029, line and paragraph separators most renderers do not break on;
 * - TAG characters (U+E0000–U+E007F): each mirrors an ASCII character and renders as nothing
 *   ("ASCII smuggling"); a run of them is decoded so the reader sees what it says. The one
 *   legitimate use, a subdivision flag (U+1F3F4, lowercase tags, U+E007F), is left alone;
 * - variation selectors (U+FE00–U+FE0F, U+E0100–U+E01EF) where they select nothing: a single
 *   selector after a visible non-ASCII character (an emoji's U+FE0F, an ideograph's variant) or
 *   a keycap (`1` U+FE0F U+20E3) is ordinary text; a run of them, or one after ASCII, carries
 *   bytes (one selector per byte, "emoji smuggling") and is decoded the same way.
 *
 * Not flagged: homoglyphs (Cyrillic "а" for Latin "a"); they need a confusables table per script.
 */

const NAMES: Record<number, string> = {
  0x00ad: 'SOFT HYPHEN',
  0x034f: 'COMBINING GRAPHEME JOINER',
  0x061c: 'ARABIC LETTER MARK',
  0x115f: 'HANGUL CHOSEONG FILLER',
  0x1160: 'HANGUL JUNGSEONG FILLER',
  0x180e: 'MONGOLIAN VOWEL SEPARATOR',
  0x200b: 'ZERO WIDTH SPACE',
  0x200c: 'ZERO WIDTH NON-JOINER',
  0x200d: 'ZERO WIDTH JOINER',
  0x200e: 'LEFT-TO-RIGHT MARK',
  0x200f: 'RIGHT-TO-LEFT MARK',
  0x2028: 'LINE SEPARATOR',
  0x2029: 'PARAGRAPH SEPARATOR',
  0x202a: 'LEFT-TO-RIGHT EMBEDDING',
  0x202b: 'RIGHT-TO-LEFT EMBEDDING',
  0x202c: 'POP DIRECTIONAL FORMATTING',
  0x202d: 'LEFT-TO-RIGHT OVERRIDE',
  0x202e: 'RIGHT-TO-LEFT OVERRIDE',
  0x2060: 'WORD JOINER',
  0x2061: 'FUNCTION APPLICATION',
  0x2062: 'INVISIBLE TIMES',
  0x2063: 'INVISIBLE SEPARATOR',
  0x2064: 'INVISIBLE PLUS',
  0x2066: 'LEFT-TO-RIGHT ISOLATE',
  0x2067: 'RIGHT-TO-LEFT ISOLATE',
  0x2068: 'FIRST STRONG ISOLATE',
  0x2069: 'POP DIRECTIONAL ISOLATE',
  0x3164: 'HANGUL FILLER',
  0xfeff: 'ZERO WIDTH NO-BREAK SPACE',
  0xffa0: 'HALFWIDTH HANGUL FILLER',
};

/** Characters that are hidden wherever they stand (variation selectors depend on context: `hiddenRuns`). */
export const INVISIBLE_CHARACTERS =
  /[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\u{1d173}-\u{1d17a}]/gu;

const ALWAYS_HIDDEN = new RegExp(`^${INVISIBLE_CHARACTERS.source}$`, 'u');

export function isTagCharacter(codePoint: number): boolean {
  return codePoint >= 0xe0000 && codePoint <= 0xe007f;
}

export function isVariationSelector(codePoint: number): boolean {
  return (codePoint >= 0xfe00 && codePoint <= 0xfe0f) || (codePoint >= 0xe0100 && codePoint <= 0xe01ef);
}

/** One stretch of hidden characters: a single character, or a run of TAG characters or variation selectors. */
export interface HiddenRun {
  /** UTF-16 offset in the text and length of the run. */
  index: number;
  length: number;
  kind: 'character' | 'tags' | 'selectors';
  /** The run's code points. */
  codePoints: number[];
}

/** The UTF-16 length of a code point. */
function width(codePoint: number): number {
  return codePoint > 0xffff ? 2 : 1;
}

/** A subdivision flag: U+1F3F4, two to six lowercase tag letters or digits, U+E007F. */
function flagTagsEnd(text: string, index: number, previous: number | undefined): number | undefined {
  if (previous !== 0x1f3f4) return undefined;
  let at = index;
  let letters = 0;
  for (;;) {
    const codePoint = text.codePointAt(at);
    if (codePoint === undefined) return undefined;
    if (codePoint === 0xe007f) return letters >= 2 && letters <= 6 ? at + 2 : undefined;
    if (!((codePoint >= 0xe0061 && codePoint <= 0xe007a) || (codePoint >= 0xe0030 && codePoint <= 0xe0039))) return undefined;
    letters += 1;
    at += 2;
  }
}

/** Every hidden character or run in the text (a byte-order mark at offset 0 is not one when `startOfFile`). */
export function hiddenRuns(text: string, startOfFile = true): HiddenRun[] {
  const runs: HiddenRun[] = [];
  let previous: number | undefined;
  let index = 0;
  while (index < text.length) {
    const codePoint = text.codePointAt(index) ?? 0;
    const size = width(codePoint);
    if (isTagCharacter(codePoint)) {
      const flagEnd = flagTagsEnd(text, index, previous);
      if (flagEnd !== undefined) {
        previous = 0xe007f;
        index = flagEnd;
        continue;
      }
      const codePoints: number[] = [];
      let end = index;
      for (let next = codePoint; isTagCharacter(next); next = text.codePointAt(end) ?? 0) {
        codePoints.push(next);
        end += 2;
      }
      runs.push({ index, length: end - index, kind: 'tags', codePoints });
      previous = codePoints.at(-1);
      index = end;
      continue;
    }
    if (isVariationSelector(codePoint)) {
      const codePoints: number[] = [];
      let end = index;
      for (let next = codePoint; isVariationSelector(next); next = text.codePointAt(end) ?? 0) {
        codePoints.push(next);
        end += width(next);
      }
      const keycap = previous !== undefined && /[0-9#*]/.test(String.fromCodePoint(previous)) && text.codePointAt(end) === 0x20e3;
      const selectsAGlyph = codePoints.length === 1 && previous !== undefined && (previous >= 0x80 || keycap) && !isHidden(previous);
      if (!selectsAGlyph) runs.push({ index, length: end - index, kind: 'selectors', codePoints });
      previous = codePoints.at(-1);
      index = end;
      continue;
    }
    if (isHidden(codePoint) && !(codePoint === 0xfeff && index === 0 && startOfFile)) runs.push({ index, length: size, kind: 'character', codePoints: [codePoint] });
    previous = codePoint;
    index += size;
  }
  return runs;
}

function isHidden(codePoint: number): boolean {
  return ALWAYS_HIDDEN.test(String.fromCodePoint(codePoint)) || isTagCharacter(codePoint);
}

export function codePointLabel(codePoint: number): string {
  return `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;
}

function runName(run: HiddenRun): string {
  const first = run.codePoints[0] ?? 0;
  if (run.kind === 'tags') return `${codePointLabel(first)} TAG CHARACTER${run.codePoints.length > 1 ? ` (a run of ${run.codePoints.length}: hidden ASCII text)` : ''}`;
  if (run.kind === 'selectors') return `${codePointLabel(first)} VARIATION SELECTOR${run.codePoints.length > 1 ? ` (a run of ${run.codePoints.length}: hidden bytes)` : ' (selecting nothing)'}`;
  return `${codePointLabel(first)} ${NAMES[first] ?? 'invisible character'}`;
}

/** The ASCII a run of TAG characters mirrors (U+E0041 is `A`); the language tag and cancel tag are dropped. */
export function decodeTags(codePoints: readonly number[]): string {
  return codePoints.map((codePoint) => codePoint - 0xe0000).filter((ascii) => ascii >= 0x20 && ascii < 0x7f).map((ascii) => String.fromCharCode(ascii)).join('');
}

/**
 * The bytes a run of variation selectors carries (U+FE00–U+FE0F are 0–15, U+E0100–U+E01EF are
 * 16–255), read as UTF-8; undefined when they do not spell readable text.
 */
export function decodeSelectors(codePoints: readonly number[]): string | undefined {
  if (codePoints.length < 2) return undefined;
  const bytes = Uint8Array.from(codePoints.map((codePoint) => (codePoint <= 0xfe0f ? codePoint - 0xfe00 : codePoint - 0xe0100 + 16)));
  const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  const readable = [...text].filter((char) => /[\p{L}\p{N}\p{P}\p{S}\p{Zs}\n\t]/u.test(char)).length;
  return readable >= Math.max(2, [...text].length * 0.8) ? text : undefined;
}

export interface InvisibleCharacter {
  /** 1-based line of the text. */
  line: number;
  /** 0-based offset in the line. */
  column: number;
  codePoint: string;
  name: string;
}

/** Every invisible or bidi control character (a run of TAG characters or selectors counts once), except a byte-order mark at its start. */
export function invisibleCharacters(text: string, firstLine = 1): InvisibleCharacter[] {
  const found: InvisibleCharacter[] = [];
  text.split('\n').forEach((line, index) => {
    const lineNumber = firstLine + index;
    for (const run of hiddenRuns(line, lineNumber === 1)) {
      found.push({ line: lineNumber, column: run.index, codePoint: codePointLabel(run.codePoints[0] ?? 0), name: runName(run) });
    }
  });
  return found;
}

/**
 * The text with each hidden character written out visibly, e.g. `<U+202E>`; a run of TAG
 * characters as `<TAG text: "…">` with the ASCII it mirrors, a run of variation selectors as
 * `<variation selectors: "…">` with the text its bytes spell (or each selector's code point).
 */
export function escapeInvisible(text: string): string {
  let out = '';
  let cursor = 0;
  for (const run of hiddenRuns(text)) {
    out += text.slice(cursor, run.index) + describeRun(run);
    cursor = run.index + run.length;
  }
  return out + text.slice(cursor);
}

/** The visible form of one hidden run. */
export function describeRun(run: HiddenRun): string {
  if (run.kind === 'tags') {
    const decoded = decodeTags(run.codePoints);
    return decoded ? `<TAG text: ${JSON.stringify(decoded)}>` : run.codePoints.map((codePoint) => `<${codePointLabel(codePoint)}>`).join('');
  }
  if (run.kind === 'selectors') {
    const decoded = decodeSelectors(run.codePoints);
    if (decoded !== undefined) return `<variation selectors: ${JSON.stringify(escapeInvisible(decoded))}>`;
  }
  return run.codePoints.map((codePoint) => `<${codePointLabel(codePoint)}>`).join('');
}
