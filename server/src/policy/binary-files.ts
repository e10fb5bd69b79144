import { createHash } from 'node:crypto';
import { inflateSync } from 'node:zlib';

/**
 * Binary files in a diff, and the size cap. A binary file is listed by name, size and sha256 and
 * never scanned as text: its patch is base85 of deflated bytes, and reading that as lines (one
 * "random" finding per line) is what made a 30 MB file freeze the server. Only an archive (gzip,
 * zip) is opened, member by member, for the rules (`secret-decode.ts`).
 */

/** Past this many bytes of diff the gate reads nothing and blocks the change (`diff-size:bytes`). */
export const MAX_DIFF_BYTES = 32 * 1024 * 1024;
/** A binary file's content is inflated (to hash it and open archives) up to this size. */
export const MAX_BINARY_BYTES = 64 * 1024 * 1024;

export interface BinaryFile {
  path: string;
  change: 'added' | 'modified' | 'deleted' | 'renamed';
  oldPath?: string;
  /** Size of the new content in bytes, when the patch carries it whole (`literal`). */
  size?: number;
  /** sha256 of the new content, when it was inflated. */
  sha256?: string;
  /** The new content (inflated), for opening archives; absent when deleted, a delta, or too big. */
  content?: Buffer;
}

const BASE85 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~';
const BASE85_VALUE = new Int16Array(128).fill(-1);
for (let i = 0; i < BASE85.length; i += 1) BASE85_VALUE[BASE85.charCodeAt(i)] = i;

/** git's base85 lines (`base85.c`): a length character (A–Z 1–26, a–z 27–52), then 5 characters per 4 bytes. */
function decodeBase85Lines(lines: readonly string[]): Buffer | undefined {
  const total = lines.reduce((sum, line) => sum + lineLength(line), 0);
  const out = Buffer.alloc(total);
  let at = 0;
  for (const line of lines) {
    const length = lineLength(line);
    let written = 0;
    for (let i = 1; i + 5 <= line.length && written < length; i += 5) {
      let value = 0;
      for (let k = 0; k < 5; k += 1) {
        const digit = BASE85_VALUE[line.charCodeAt(i + k)] ?? -1;
        if (digit < 0) return undefined;
        value = value * 85 + digit;
      }
      for (let shift = 24; shift >= 0 && written < length; shift -= 8, written += 1) out[at + written] = (value >>> shift) & 0xff;
    }
    at += length;
  }
  return out;
}

function lineLength(line: string): number {
  const code = line.charCodeAt(0);
  if (code >= 65 && code <= 90) return code - 64;
  if (code >= 97 && code <= 122) return code - 96 + 26;
  return 0;
}

export interface SplitDiff {
  /** The diff without its binary files' sections: what is parsed and scanned as text. */
  text: string;
  binaries: BinaryFile[];
}

function pathOf(header: string): string {
  const match = /^diff --git (?:"?a\/.*?"? )?"?b\/(.*?)"?$/.exec(header);
  return match?.[1] ?? header.slice('diff --git '.length);
}

/** The new content of a `GIT binary patch` section, from its first (forward) block. */
function binaryContent(section: readonly string[], start: number): Pick<BinaryFile, 'size' | 'sha256' | 'content'> {
  const head = /^(literal|delta) (\d+)$/.exec(section[start + 1] ?? '');
  if (!head) return {};
  const size = Number(head[2]);
  if (head[1] !== 'literal') return {};
  if (size > MAX_BINARY_BYTES) return { size };
  const payload: string[] = [];
  for (let i = start + 2; i < section.length && section[i] !== ''; i += 1) payload.push(section[i]!);
  const deflated = decodeBase85Lines(payload);
  if (!deflated) return { size };
  try {
    const content = inflateSync(deflated, { maxOutputLength: MAX_BINARY_BYTES });
    return { size, sha256: createHash('sha256').update(content).digest('hex'), content };
  } catch {
    return { size };
  }
}

/** Splits a diff into its text part and its binary files (one linear pass over the lines). */
export function splitBinaryFiles(diff: string): SplitDiff {
  if (!diff.includes('GIT binary patch') && !diff.includes('\nBinary files ') && !diff.startsWith('Binary files ')) return { text: diff, binaries: [] };
  const lines = diff.split('\n');
  const text: string[] = [];
  const binaries: BinaryFile[] = [];
  let section: string[] = [];
  const flush = () => {
    const patch = section.indexOf('GIT binary patch');
    const header = section[0] ?? '';
    if (header.startsWith('diff --git ') && (patch >= 0 || section.some((line) => /^Binary files .* differ$/.test(line)))) {
      const deleted = section.some((line) => line.startsWith('deleted file mode'));
      const renamedFrom = section.find((line) => line.startsWith('rename from '))?.slice('rename from '.length);
      const change = deleted ? 'deleted' : section.some((line) => line.startsWith('new file mode')) ? 'added' : renamedFrom !== undefined ? 'renamed' : 'modified';
      binaries.push({ path: pathOf(header), change, ...(renamedFrom !== undefined ? { oldPath: renamedFrom } : {}), ...(patch >= 0 && !deleted ? binaryContent(section, patch) : {}) });
    } else {
      text.push(...section);
    }
    section = [];
  };
  for (const line of lines) {
    if (line.startsWith('diff --git ')) flush();
    section.push(line);
  }
  flush();
  return { text: text.join('\n'), binaries };
}

function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * The `diff-size:bytes` message for a diff over `MAX_DIFF_BYTES`, naming its largest files by a
 * walk over the file headers only (nothing is decoded or scanned).
 */
export function oversizeMessage(diff: string): string {
  const sizes: Array<{ path: string; bytes: number }> = [];
  let at = diff.startsWith('diff --git ') ? 0 : diff.indexOf('\ndiff --git ');
  while (at >= 0) {
    const start = at === 0 && diff.startsWith('diff --git ') ? 0 : at + 1;
    const next = diff.indexOf('\ndiff --git ', start);
    const end = next < 0 ? diff.length : next;
    const header = diff.slice(start, Math.min(end, diff.indexOf('\n', start) < 0 ? end : diff.indexOf('\n', start)));
    sizes.push({ path: pathOf(header), bytes: end - start });
    at = next;
  }
  sizes.sort((a, b) => b.bytes - a.bytes);
  const largest = sizes.slice(0, 3).map((file) => `${file.path} (${megabytes(file.bytes)} of diff)`).join(', ');
  return `the diff is ${megabytes(diff.length)}; the cap is ${megabytes(MAX_DIFF_BYTES)}, so it was not read${largest ? `; largest: ${largest}` : ''}. A change this big is for a person: split it, or leave generated and binary files out`;
}

/** `path (12.3 MiB, sha256 ab12…)`: how a binary file is listed. */
export function describeBinary(file: BinaryFile): string {
  const size = file.size === undefined ? 'size unknown' : file.size < 1024 * 1024 ? `${file.size} bytes` : megabytes(file.size);
  return `${file.path} (${size}${file.sha256 ? `, sha256 ${file.sha256}` : ''})`;
}
