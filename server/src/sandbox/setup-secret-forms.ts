/**
 * The forms of a setup secret's value looked for in a snapshot's committed layer, each with the
 * name of its encoding (what a failed build says; the value itself is never shown).
 *
 * Every form is a fixed string derived from the value, so one `grep -F` pass over the layer finds
 * them all, whatever the file's size: the value (each line of a multi-line one), its hex (lower
 * and upper), its base64 and base64url at each of the three byte alignments (only the characters
 * the value alone decides, so `base64("user:" + value)` in an `.npmrc` `_auth` or a Docker
 * `config.json` `auth`, or the value base64'd inside any longer text, is found too), its
 * URL-encoding (percent-escaping the special characters, or every byte), all of the same for
 * the value reversed, rot13'd, and both; and each of those forms reversed and rot13'd as text
 * (reversed hex, rot13 of base64).
 *
 * A value split across lines or string literals is `splitForms`: the few forms an encoder wraps
 * or a script splits (raw, hex, base64), matched with any whitespace, quotes or concatenation
 * operators between their characters.
 *
 * Not covered: other keyed or compressed transforms (xor, encryption, bzip2/xz/zstd), a value cut
 * into pieces stored in different files, a value the build user made unreadable.
 */

export interface SecretForm {
  /** The bytes looked for, as latin1 text (one character a byte). */
  text: string;
  /** How the value became this form: `hex`, `base64 (inside a longer text)`, `reversed, then hex`. */
  encoding: string;
}

/** Shorter forms would be found in ordinary text. */
export const MINIMUM_SEARCH_FORM_LENGTH = 6;
/** Base64 of a value embedded in something longer: fewer characters than this would match by chance. */
const MINIMUM_EMBEDDED_BASE64_LENGTH = 8;

function rot13(text: string): string {
  return text.replace(/[A-Za-z]/g, (char) => {
    const base = char <= 'Z' ? 65 : 97;
    return String.fromCharCode(((char.charCodeAt(0) - base + 13) % 26) + base);
  });
}

function reverseBytes(bytes: Buffer): Buffer {
  return Buffer.from(bytes).reverse();
}

/**
 * The base64 characters that depend on `bytes` alone when they stand `alignment` bytes (0, 1 or
 * 2) into a 3-byte group of a longer input: encoded between all-zero and all-one neighbours, the
 * characters both encodings share are the value's own.
 */
export function base64Middle(bytes: Buffer, alignment: number, alphabet: 'base64' | 'base64url'): string {
  // The padding is the same in both: it is no character of the value's.
  const low = Buffer.concat([Buffer.alloc(alignment, 0x00), bytes, Buffer.alloc(2, 0x00)]).toString(alphabet).replace(/=+$/, '');
  const high = Buffer.concat([Buffer.alloc(alignment, 0xff), bytes, Buffer.alloc(2, 0xff)]).toString(alphabet).replace(/=+$/, '');
  let first = 0;
  while (first < low.length && low[first] !== high[first]) first += 1;
  let last = Math.min(low.length, high.length) - 1;
  while (last >= first && low[last] !== high[last]) last -= 1;
  return low.slice(first, last + 1);
}

/** Every byte as `%XX` (upper or lower case), as some encoders write even unreserved characters. */
function percentEveryByte(bytes: Buffer, upper: boolean): string {
  const hex = bytes.toString('hex');
  let out = '';
  for (let at = 0; at < hex.length; at += 2) out += `%${upper ? hex.slice(at, at + 2).toUpperCase() : hex.slice(at, at + 2)}`;
  return out;
}

/** The value's encodings, each as latin1 text with its name. */
function encodings(bytes: Buffer): SecretForm[] {
  const text = bytes.toString('latin1');
  const forms: SecretForm[] = text.split(/\r?\n/).map((line) => ({ text: line.trim(), encoding: 'raw' }));
  forms.push({ text: bytes.toString('hex'), encoding: 'hex' }, { text: bytes.toString('hex').toUpperCase(), encoding: 'hex (upper case)' });
  for (const alphabet of ['base64', 'base64url'] as const) {
    forms.push({ text: bytes.toString(alphabet).replace(/=+$/, ''), encoding: alphabet });
    for (const alignment of [0, 1, 2]) {
      const middle = base64Middle(bytes, alignment, alphabet);
      if (middle.length >= MINIMUM_EMBEDDED_BASE64_LENGTH) forms.push({ text: middle, encoding: `${alphabet} (inside a longer text)` });
    }
  }
  const utf8 = bytes.toString('utf8');
  // A reversed multi-byte character is no UTF-8: percent-escape it byte by byte instead.
  const uri = Buffer.from(utf8, 'utf8').equals(bytes) ? encodeURIComponent(utf8) : percentEveryByte(bytes, true);
  forms.push({ text: uri, encoding: 'URL-encoded' }, { text: percentEveryByte(bytes, true), encoding: 'URL-encoded' }, { text: percentEveryByte(bytes, false), encoding: 'URL-encoded' });
  return forms;
}

/** The value transformed before it is encoded. */
function transforms(value: string): Array<{ bytes: Buffer; name: string }> {
  const bytes = Buffer.from(value, 'utf8');
  const reversedText = Buffer.from([...value].reverse().join(''), 'utf8');
  return [
    { bytes, name: '' },
    { bytes: reverseBytes(bytes), name: 'reversed' },
    { bytes: reversedText, name: 'reversed' },
    { bytes: Buffer.from(rot13(value), 'utf8'), name: 'rot13' },
    { bytes: Buffer.from(rot13([...value].reverse().join('')), 'utf8'), name: 'reversed and rot13' },
  ];
}

function named(transform: string, encoding: string, after: string): string {
  const steps = [transform, encoding === 'raw' && transform !== '' ? '' : encoding, after].filter(Boolean);
  return steps.join(', then ');
}

/** All forms searched for, longest first, one per text (the first name found wins). */
export function searchForms(value: string): SecretForm[] {
  // A value this short would be found in ordinary text in any of its forms.
  if (Buffer.byteLength(value, 'utf8') < MINIMUM_SEARCH_FORM_LENGTH) return [];
  const byText = new Map<string, string>();
  const add = (text: string, encoding: string): void => {
    if (text.length >= MINIMUM_SEARCH_FORM_LENGTH && !byText.has(text)) byText.set(text, encoding);
  };
  const encoded = transforms(value).flatMap((transform) => encodings(transform.bytes).map((form) => ({ ...form, transform: transform.name })));
  // The plain names first: the value reversed is "reversed", not "raw, then reversed".
  for (const form of encoded) add(form.text, named(form.transform, form.encoding, ''));
  for (const form of encoded) {
    add([...form.text].reverse().join(''), named(form.transform, form.encoding, 'reversed'));
    add(rot13(form.text), named(form.transform, form.encoding, 'rot13'));
  }
  return [...byText].map(([text, encoding]) => ({ text, encoding })).sort((a, b) => b.text.length - a.text.length);
}

/** The forms searched for split across lines or literals: the value, its hex and base64 (what encoders wrap). */
export function splitForms(value: string): SecretForm[] {
  if (Buffer.byteLength(value, 'utf8') < MINIMUM_SEARCH_FORM_LENGTH) return [];
  const bytes = Buffer.from(value, 'utf8');
  const forms = encodings(bytes).filter((form) => form.encoding !== 'URL-encoded');
  forms.push({ text: reverseBytes(bytes).toString('latin1'), encoding: 'reversed' });
  const byText = new Map<string, string>();
  // Whitespace is a separator anyway (and a pattern file's lines cannot hold a line break).
  for (const form of forms.map((form) => ({ ...form, text: form.text.replace(/\s/g, '') }))) if (form.text.length >= MINIMUM_SEARCH_FORM_LENGTH && !byText.has(form.text)) byText.set(form.text, form.encoding);
  return [...byText].map(([text, encoding]) => ({ text, encoding }));
}

/**
 * What may stand between two characters of a split value: whitespace and line breaks, quotes,
 * and the concatenation operators of shell, JavaScript, Python, PHP and Lua (`\`, `+`, `.`, `&`, `,`).
 */
const SPLIT_SEPARATORS = ' \t\r\n\v\f"\'`+.\\&,';

/** An ERE (GNU grep -E, C locale) matching `text` with separators between its characters. */
export function splitPattern(text: string): string {
  const separators = '[[:space:]"\'`+.\\&,]*';
  return [...text].map(ereLiteral).join(separators);
}

/**
 * An ERE for the value URL-encoded by any encoder: each character that is not a letter or a
 * digit either as it is or as `%XX` (either case), a space also as `+` (Python's `quote` keeps
 * `/`, `encodeURIComponent` does not: the fixed forms cannot list every mix). Undefined when the
 * value has no such character (its URL-encoding is itself).
 */
export function urlPattern(value: string): string | undefined {
  if (/^[A-Za-z0-9]*$/.test(value) || /[\0\n]/.test(value)) return undefined;
  const byte = (code: number): string => {
    const hex = code.toString(16).padStart(2, '0');
    return `%[${hex[0]}${hex[0]?.toUpperCase()}][${hex[1]}${hex[1]?.toUpperCase()}]`;
  };
  const parts = [...value].map((char) => {
    if (/[A-Za-z0-9]/.test(char)) return char;
    const encoded = [...Buffer.from(char, 'utf8')].map(byte).join('');
    const raw = [...Buffer.from(char, 'utf8').toString('latin1')].map(ereLiteral).join('');
    return `(${raw}|${encoded}${char === ' ' ? '|[+]' : ''})`;
  });
  return parts.join('');
}

/** `%XX` escapes (and `+` for a space) decoded, byte for byte; other bytes as they are. */
export function percentDecode(latin1: string): string {
  return latin1.replace(/\+/g, ' ').replace(/%([0-9A-Fa-f]{2})/g, (_match, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

/** One character as an ERE matching only itself (GNU grep, C locale). */
export function ereLiteral(char: string): string {
  if (/[A-Za-z0-9]/.test(char)) return char;
  if (char === '\\') return '\\\\';
  if (char === '^') return '\\^';
  if (char === ']') return '[]]';
  return `[${char}]`;
}

/** Whether `match` (a `splitPattern` hit) is `text` with separators between its characters. */
export function isSplitOf(match: string, text: string): boolean {
  let at = 0;
  for (const char of match) {
    if (at < text.length && char === text[at]) at += 1;
    else if (!SPLIT_SEPARATORS.includes(char)) return false;
  }
  return at === text.length;
}
