/**
 * Replaces many literal strings in one pass over the text, in time linear in its length (plus
 * the patterns). Masking used to split and join the whole text once per secret found, which grew
 * with the square of a diff's size (one finding per line of a big random file: 3.9 MB took 191 s).
 *
 * Rabin–Karp: a rolling hash of the next `width` characters (the shortest pattern's length, at
 * most 8) is looked up in a bit table, then in a map of the patterns starting with that hash,
 * longest first. An Aho–Corasick automaton was tried first: building its trie for 50,000
 * 64-character secrets cost more than all the scanning.
 *
 * The longest pattern starting at the leftmost position wins (a secret that contains another is
 * replaced whole). Two secrets that overlap are both replaced: the rest of the later one becomes
 * its marker too, so no tail of it shows.
 */

const BASE = 0x01000193;
const TABLE_BITS = 22;

function hashOf(text: string, start: number, width: number): number {
  let hash = 0;
  for (let i = start; i < start + width; i += 1) hash = (Math.imul(hash, BASE) + text.charCodeAt(i)) | 0;
  return hash;
}

/** Every occurrence of each key of `replacements` in `text` replaced by its value. */
export function replaceMany(text: string, replacements: ReadonlyMap<string, string>): string {
  const patterns = [...replacements.keys()].filter((pattern) => pattern.length > 0);
  if (patterns.length === 0 || text === '') return text;
  if (patterns.length === 1) {
    const only = patterns[0]!;
    return text.includes(only) ? text.split(only).join(replacements.get(only)!) : text;
  }
  const width = Math.min(8, ...patterns.map((pattern) => pattern.length));
  if (text.length < width) return text;
  const byHash = new Map<number, string[]>();
  const table = new Uint8Array(1 << (TABLE_BITS - 3));
  for (const pattern of patterns) {
    const hash = hashOf(pattern, 0, width);
    const slot = hash >>> (32 - TABLE_BITS);
    table[slot >>> 3]! |= 1 << (slot & 7);
    const list = byHash.get(hash);
    if (list) list.push(pattern);
    else byHash.set(hash, [pattern]);
  }
  for (const list of byHash.values()) list.sort((a, b) => b.length - a.length);
  // BASE^(width-1): what the character leaving the window contributed.
  let leaving = 1;
  for (let i = 1; i < width; i += 1) leaving = Math.imul(leaving, BASE);

  const out: string[] = [];
  let cursor = 0;
  let hash = hashOf(text, 0, width);
  for (let i = 0; ; i += 1) {
    const slot = hash >>> (32 - TABLE_BITS);
    if ((table[slot >>> 3]! & (1 << (slot & 7))) !== 0) {
      const found = byHash.get(hash)?.find((pattern) => text.startsWith(pattern, i));
      if (found !== undefined && i + found.length > cursor) {
        out.push(text.slice(cursor, Math.max(cursor, i)), replacements.get(found)!);
        cursor = i + found.length;
      }
    }
    if (i + width >= text.length) break;
    hash = (Math.imul(hash - Math.imul(text.charCodeAt(i), leaving), BASE) + text.charCodeAt(i + width)) | 0;
  }
  if (cursor === 0 && out.length === 0) return text;
  out.push(text.slice(cursor));
  return out.join('');
}
