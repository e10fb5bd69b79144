/**
 * Invisible and bidirectional control characters (Trojan Source, CVE-2021-42574): text that a
 * reviewer reads one way and a compiler another. The set is the paper's bidi controls
 * (U+202A–U+202E embeddings and overrides, U+2066–U+2069 isolates) plus U+200E/U+200F marks and
 * U+061C, and the zero-width characters that hide content or split identifiers (U+200B–U+200D,
 * U+2060, U+FEFF anywhere but a file's first character, where it is a byte-order mark).
 *
 * Not flagged: homoglyphs (Cyrillic "а" for Latin "a"); they need a confusables table per script.
 */

const NAMES: Record<number, string> = {
  0x061c: 'ARABIC LETTER MARK',
  0x200b: 'ZERO WIDTH SPACE',
  0x200c: 'ZERO WIDTH NON-JOINER',
  0x200d: 'ZERO WIDTH JOINER',
  0x200e: 'LEFT-TO-RIGHT MARK',
  0x200f: 'RIGHT-TO-LEFT MARK',
  0x202a: 'LEFT-TO-RIGHT EMBEDDING',
  0x202b: 'RIGHT-TO-LEFT EMBEDDING',
  0x202c: 'POP DIRECTIONAL FORMATTING',
  0x202d: 'LEFT-TO-RIGHT OVERRIDE',
  0x202e: 'RIGHT-TO-LEFT OVERRIDE',
  0x2060: 'WORD JOINER',
  0x2066: 'LEFT-TO-RIGHT ISOLATE',
  0x2067: 'RIGHT-TO-LEFT ISOLATE',
  0x2068: 'FIRST STRONG ISOLATE',
  0x2069: 'POP DIRECTIONAL ISOLATE',
  0xfeff: 'ZERO WIDTH NO-BREAK SPACE',
};

export const INVISIBLE_CHARACTERS = /[\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff]/g;

export interface InvisibleCharacter {
  /** 1-based line of the text. */
  line: number;
  /** 0-based offset in the line. */
  column: number;
  codePoint: string;
  name: string;
}

function codePointLabel(char: string): string {
  return `U+${(char.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/** Every invisible or bidi control character of a text, except a byte-order mark at its start. */
export function invisibleCharacters(text: string, firstLine = 1): InvisibleCharacter[] {
  const found: InvisibleCharacter[] = [];
  text.split('\n').forEach((line, index) => {
    INVISIBLE_CHARACTERS.lastIndex = 0;
    for (const match of line.matchAll(INVISIBLE_CHARACTERS)) {
      const lineNumber = firstLine + index;
      if (match[0] === '\ufeff' && lineNumber === 1 && match.index === 0) continue;
      const label = codePointLabel(match[0]);
      found.push({ line: lineNumber, column: match.index, codePoint: label, name: `${label} ${NAMES[match[0].codePointAt(0) ?? 0] ?? 'invisible character'}` });
    }
  });
  return found;
}

/** The text with each invisible character written out visibly, e.g. `<U+202E>`. */
export function escapeInvisible(text: string): string {
  return text.replace(INVISIBLE_CHARACTERS, (char) => `<${codePointLabel(char)}>`);
}
