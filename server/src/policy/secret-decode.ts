import { gunzipSync, inflateRawSync } from 'node:zlib';

/**
 * Secrets in other clothes: the text the rules should also see. A token hex- or base64-encoded,
 * split across a string concatenation, or inside a gzip file or a zip member reads as nothing to
 * the rules; these functions undo each (bounded: sizes and nesting capped) so the same rules run
 * on what the encoding hides.
 *
 * Only results that read as text are returned: the integrity hashes and checksums that fill
 * lockfiles decode to random bytes and are dropped, so they cost nothing in precision.
 */

/** Decoded text shorter than this is not worth a rule (no token format is shorter). */
const MIN_DECODED = 16;
/** Share of printable characters for decoded bytes to count as text. */
const PRINTABLE_SHARE = 0.95;
/** Output cap of one gzip file or zip member, and of all members of one archive together. */
export const MAX_INFLATED_BYTES = 8 * 1024 * 1024;
/** Archives inside archives: a gzip in a zip is read, a third level is not. */
export const MAX_ARCHIVE_DEPTH = 2;
/** Members read from one zip at most. */
const MAX_ZIP_MEMBERS = 1000;

function isPrintable(bytes: Buffer): boolean {
  if (bytes.length < MIN_DECODED) return false;
  let printable = 0;
  for (const byte of bytes) if ((byte >= 0x20 && byte < 0x7f) || byte === 0x0a || byte === 0x0d || byte === 0x09) printable += 1;
  return printable / bytes.length >= PRINTABLE_SHARE;
}

export interface DecodedRun {
  /** The encoded text as it stands in the line (what masking replaces). */
  encoded: string;
  encoding: 'hex' | 'base64';
  text: string;
}

// Whole runs only (a lookbehind anchors each match at a run's start, which keeps this linear).
const HEX_RUN = /(?<![0-9A-Fa-f])(?:[0-9A-Fa-f]{2}){16,}(?![0-9A-Fa-f])/g;
const BASE64_RUN = /(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24,}={0,2}/g;

/** Hex and base64 runs in a line that decode to text. */
export function decodeRuns(line: string): DecodedRun[] {
  const runs: DecodedRun[] = [];
  for (const match of line.matchAll(HEX_RUN)) {
    const bytes = Buffer.from(match[0], 'hex');
    if (isPrintable(bytes)) runs.push({ encoded: match[0], encoding: 'hex', text: bytes.toString('latin1') });
  }
  for (const match of line.matchAll(BASE64_RUN)) {
    const run = match[0];
    if (/^[0-9A-Fa-f]+$/.test(run)) continue; // hex, above
    const body = run.replace(/=+$/, '');
    if (body.length % 4 === 1) continue; // no base64 has this length
    const bytes = Buffer.from(body, /[-_]/.test(body) ? 'base64url' : 'base64');
    if (isPrintable(bytes)) runs.push({ encoded: run, encoding: 'base64', text: bytes.toString('latin1') });
  }
  return runs;
}

/** A string literal's content, in one line of code: `"…"`, `'…'` or `` `…` `` (no escapes decoded). */
const LITERAL = /(["'`])((?:\\.|(?!\1)[^\\])*)\1/g;
const FIRST_LITERAL = new RegExp(LITERAL.source);
/** A line that continues a concatenation: it ends with `+`, `.`, `..`, `\` or `&` after a literal. */
const CONTINUES = /(["'`])\s*(?:\+|\.\.?|\\|&)\s*$/;
/** A line that is the next part of one: it starts with a literal, or `+`/`.`/`..`/`&` then a literal. */
const CONTINUATION = /^\s*(?:\+|\.\.?|&)?\s*["'`]/;

export interface JoinedString {
  /** Index (into the lines given) of the first and the last line joined. */
  first: number;
  last: number;
  /** The literals' contents in order: the parts, and what they make together. */
  parts: string[];
  text: string;
}

/**
 * Strings split across lines by concatenation (`"ghp_abc" +` / `  "def";`, Python's implicit
 * `("abc"` / `"def")`, shell's `\`): the literals of each run of continued lines joined into one
 * value, so a token split in two meets the rules whole, whatever its name.
 */
export function joinConcatenations(lines: readonly string[]): JoinedString[] {
  // Line k is continued by line k + 1: an operator after its last literal, or (implicit
  // concatenation) it ends with a literal and the next line starts with one.
  const continued = (k: number): boolean =>
    k + 1 < lines.length && CONTINUATION.test(lines[k + 1]!) && (CONTINUES.test(lines[k]!) || (/["'`]\s*$/.test(lines[k]!) && /^\s*["'`]/.test(lines[k + 1]!)));
  const joined: JoinedString[] = [];
  let i = 0;
  while (i < lines.length) {
    const last = continued(i) ? [...lines[i]!.matchAll(LITERAL)].at(-1) : undefined;
    if (!last) {
      i += 1;
      continue;
    }
    const parts = [last[2]!];
    let j = i;
    while (continued(j)) {
      const next = FIRST_LITERAL.exec(lines[j + 1]!);
      if (!next) break;
      parts.push(next[2]!);
      j += 1;
    }
    if (parts.length > 1) joined.push({ first: i, last: j, parts, text: parts.join('') });
    i = j + 1;
  }
  return joined;
}

export interface ArchiveMember {
  /** `archive.zip!dir/file.env`, `dump.sql.gz!` (a gzip file's one member). */
  name: string;
  text: string;
}

function inflateMember(data: Buffer, method: number): Buffer | undefined {
  try {
    if (method === 0) return data;
    if (method === 8) return inflateRawSync(data, { maxOutputLength: MAX_INFLATED_BYTES });
  } catch {
    // A member over the cap or broken: nothing readable (the file is still listed with its hash).
  }
  return undefined;
}

/** Members of a zip, from its central directory (sizes are right there, unlike local headers with a data descriptor). */
function zipMembers(bytes: Buffer): Array<{ name: string; data: Buffer }> {
  const members: Array<{ name: string; data: Buffer }> = [];
  const from = Math.max(0, bytes.length - 65_557);
  let end = -1;
  for (let at = bytes.length - 22; at >= from; at -= 1) {
    if (bytes.readUInt32LE(at) === 0x06054b50) {
      end = at;
      break;
    }
  }
  if (end < 0) return members;
  const count = Math.min(bytes.readUInt16LE(end + 10), MAX_ZIP_MEMBERS);
  let at = bytes.readUInt32LE(end + 16);
  let total = 0;
  for (let k = 0; k < count && at + 46 <= bytes.length && bytes.readUInt32LE(at) === 0x02014b50; k += 1) {
    const method = bytes.readUInt16LE(at + 10);
    const compressed = bytes.readUInt32LE(at + 20);
    const nameLength = bytes.readUInt16LE(at + 28);
    const extraLength = bytes.readUInt16LE(at + 30);
    const commentLength = bytes.readUInt16LE(at + 32);
    const local = bytes.readUInt32LE(at + 42);
    const name = bytes.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    at += 46 + nameLength + extraLength + commentLength;
    if (local + 30 > bytes.length || bytes.readUInt32LE(local) !== 0x04034b50) continue;
    const start = local + 30 + bytes.readUInt16LE(local + 26) + bytes.readUInt16LE(local + 28);
    const data = inflateMember(bytes.subarray(start, Math.min(bytes.length, start + compressed)), method);
    if (!data) continue;
    total += data.length;
    if (total > MAX_INFLATED_BYTES) break;
    members.push({ name, data });
  }
  return members;
}

/**
 * The members of a gzip file or a zip archive, archives inside them opened too (nested up to
 * `MAX_ARCHIVE_DEPTH`), as bytes: the leaves. Bytes that are neither give nothing.
 */
export function archiveMembers(bytes: Buffer, name: string, depth = 1): Array<{ name: string; data: Buffer }> {
  if (depth > MAX_ARCHIVE_DEPTH) return [];
  let members: Array<{ name: string; data: Buffer }> = [];
  if (bytes.length > 2 && bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      members = [{ name: '', data: gunzipSync(bytes, { maxOutputLength: MAX_INFLATED_BYTES }) }];
    } catch {
      return [];
    }
  } else if (bytes.length > 22 && bytes.readUInt32LE(0) === 0x04034b50) {
    members = zipMembers(bytes);
  } else {
    return [];
  }
  const leaves: Array<{ name: string; data: Buffer }> = [];
  for (const member of members) {
    const inner = `${name}!${member.name}`;
    const nested = archiveMembers(member.data, inner, depth + 1);
    leaves.push(...(nested.length > 0 ? nested : [{ name: inner, data: member.data }]));
  }
  return leaves;
}

/** The text inside a gzip file or a zip archive (`archiveMembers`): each member that reads as text. */
export function archiveTexts(bytes: Buffer, name: string): ArchiveMember[] {
  return archiveMembers(bytes, name)
    .filter((member) => isPrintable(member.data))
    .map((member) => ({ name: member.name, text: member.data.toString('utf8') }));
}
