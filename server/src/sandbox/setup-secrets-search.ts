import { inflateSync } from 'node:zlib';
import { extract } from 'tar-stream';
import { DockhandError } from '../errors';
import { archiveMembers, MAX_INFLATED_BYTES } from '../policy/secret-decode';
import { ereLiteral, isSplitOf, percentDecode, searchForms, splitForms, splitPattern, urlPattern } from './setup-secret-forms';
import type { SetupSecret } from './setup-secrets';

/**
 * The search of a snapshot's committed layer for setup secrets, in any form `setup-secret-forms.ts`
 * names. The build user's own tools do the reading inside the build container (its CPU, not the
 * server's): `find` lists the regular files `docker diff` shows, one `grep -zE` pass reads each
 * file up to `SPLIT_SEARCH_MAX_BYTES` whole for every fixed form and the value split across
 * lines, a `grep -F` pass streams the larger ones for the fixed forms, and the files that start
 * like a gzip, a zip (jar, wheel) or a zlib stream come out through `tar` to be opened here with the content
 * gate's own readers (`policy/secret-decode.ts` `archiveMembers`: nested, sizes capped) and
 * searched the same way. File names and symlink targets are searched too.
 *
 * What it will not do is noted in the build log, never silently: a file over the split search's
 * size, an archive over the size opened here. A file the build user cannot read cannot be
 * searched and fails the build (it would be readable again in a task's sandbox).
 */

/** Files above this are searched for the unsplit forms only (`grep -z` holds a file without NULs whole). */
export const SPLIT_SEARCH_MAX_BYTES = 64 * 1024 * 1024;
/** An archive above this is not opened here. */
export const ARCHIVE_MAX_BYTES = 32 * 1024 * 1024;
/** The archives opened for one build together. */
export const ARCHIVES_MAX_TOTAL_BYTES = 256 * 1024 * 1024;
/** What one grep pass may print (paths and matches): enough to name many files. */
const OUTPUT_MAX_BYTES = 4 * 1024 * 1024;

export interface SecretFound {
  secret: string;
  /** The file; an archive's member as `archive!member`. */
  path: string;
  /** The form found: `hex`, `base64 (inside a longer text)`, `raw, split across lines`, `raw, in a gzip`. */
  encoding: string;
}

export interface SetupSecretSearch {
  found: SecretFound[];
  /** Regular files (or directories) the build user cannot read: not searched. */
  unreadable: string[];
  /** What was searched less than fully, and what the search cost: one line each, for the build log. */
  notes: string[];
}

/** Runs a command as the build user in the build container (`DockerSandbox.raw`'s shape). */
export interface SearchShell {
  raw(cmd: string[], options?: { stdin?: Buffer; timeoutMs?: number }): Promise<{ exitCode: number; stdout: Buffer; stderr: Buffer }>;
}

/**
 * Lists the paths on stdin (NUL-separated) that are regular files, readable or not, and symlinks,
 * as NUL-separated records, into a fresh directory under /tmp (not committed) whose name comes
 * first: the readable files (all, the ones searched whole and the larger ones, with their sizes).
 */
export const LIST_SCRIPT = `set -u; export LC_ALL=C; umask 077
d=$(mktemp -d "\${TMPDIR:-/tmp}/dockhand-secret-scan.XXXXXX") || exit 3
printf 'D\\0%s\\0' "$d"
find -files0-from - -maxdepth 0 \\( -type l -printf 'L\\0%p\\0%l\\0' \\) -o \\( -type f -readable -fprint0 "$d/files" -fprintf "$d/sized" '%s\\0%p\\0' \\( -size -${SPLIT_SEARCH_MAX_BYTES + 1}c -fprint0 "$d/whole" -o -fprint0 "$d/large" \\) -printf 'F\\0%s\\0%p\\0' \\) -o \\( -type f -printf 'U\\0%p\\0' \\)
s=$?; [ "$s" -le 1 ] || exit "$s"; exit 0`;

/**
 * Every fixed form and every split form (EREs on stdin, one a line) in each file up to
 * `SPLIT_SEARCH_MAX_BYTES`, read whole (\`-z\`: a file without NULs is one record), in one pass:
 * `path\0match\0` records.
 */
export const WHOLE_SCRIPT = `set -u; export LC_ALL=C; umask 077; d=$1; cat > "$d/whole-patterns"
xargs -0 -r -a "$d/whole" grep -HoaZz -m 20 -E -f "$d/whole-patterns" -- | head -c ${OUTPUT_MAX_BYTES}
exit "\${PIPESTATUS[0]}"`;

/** The fixed forms (patterns on stdin, one a line) in the larger files, streamed: `path\0match\n` records. */
export const LARGE_SCRIPT = `set -u; export LC_ALL=C; umask 077; d=$1; cat > "$d/large-patterns"
xargs -0 -r -a "$d/large" grep -HoaFZ -m 20 -f "$d/large-patterns" -- | head -c ${OUTPUT_MAX_BYTES}
exit "\${PIPESTATUS[0]}"`;

/**
 * The files that start as a gzip, a zip or a zlib stream (their first bytes read by one perl:
 * a shell loop takes minutes on a large layer under gVisor), within the sizes, as a tar on
 * stdout; each one left out for its size as `size\0path\0` on stderr. The scan's directory is
 * removed.
 */
export const ARCHIVES_SCRIPT = `set -u; export LC_ALL=C; umask 077; d=$1
D=$d perl -0 -ne 'BEGIN { open(LIST, ">", "$ENV{D}/archives") or die "$!"; $total = 0 }
  chomp; open(my $f, "<:raw", $_) or next; my $m = ""; read($f, $m, 4); close($f);
  next unless $m =~ /\\A(?:\\x1f\\x8b|PK\\x03\\x04|x[\\x01\\x5e\\x9c\\xda])/;
  my $size = -s $_;
  if ($size > ${ARCHIVE_MAX_BYTES} || $total + $size > ${ARCHIVES_MAX_TOTAL_BYTES}) { print STDERR "$size\\0$_\\0" } else { $total += $size; print LIST "$_\\0" }
  END { close(LIST) }' "$d/files" || exit 3
tar --null --no-recursion --absolute-names -T "$d/archives" -cf - 2>/dev/null; s=$?
rm -rf "$d"; exit "$s"`;

interface Form {
  secret: string;
  encoding: string;
  bytes: Buffer;
}

interface SplitForm extends Form {
  text: string;
  /** The form without the characters a split may put between its characters (searched in bytes stripped of them). */
  stripped: Buffer;
}

interface Matcher {
  fixed: Map<string, Form>;
  split: SplitForm[];
  /** The value URL-encoded by any encoder (`urlPattern`), with the value as latin1 to compare a decoded match with. */
  url: Array<{ secret: string; pattern: string; value: string }>;
}

const SEPARATOR_BYTES = new Set([...' \t\r\n\v\f"\'`+.\\&,'].map((char) => char.charCodeAt(0)));

function stripSeparators(bytes: Buffer): Buffer {
  const out = Buffer.allocUnsafe(bytes.length);
  let length = 0;
  for (const byte of bytes) if (!SEPARATOR_BYTES.has(byte)) out[length++] = byte;
  return out.subarray(0, length);
}

export function secretMatcher(secrets: readonly SetupSecret[]): Matcher {
  const fixed = new Map<string, Form>();
  const split: SplitForm[] = [];
  const url: Matcher['url'] = [];
  for (const secret of secrets) {
    const pattern = urlPattern(secret.value);
    if (pattern) url.push({ secret: secret.name, pattern, value: Buffer.from(secret.value, 'utf8').toString('latin1') });
    // A form with a NUL or a line break cannot be a grep pattern; its lines are forms of their own.
    for (const form of searchForms(secret.value)) {
      if (/[\0\n]/.test(form.text) || fixed.has(form.text)) continue;
      fixed.set(form.text, { secret: secret.name, encoding: form.encoding, bytes: Buffer.from(form.text, 'latin1') });
    }
    for (const form of splitForms(secret.value)) {
      if (form.text.includes('\0')) continue;
      const bytes = Buffer.from(form.text, 'latin1');
      const stripped = stripSeparators(bytes);
      if (stripped.length >= 6) split.push({ secret: secret.name, encoding: form.encoding, bytes, text: form.text, stripped });
    }
  }
  return { fixed, split, url };
}

/** The first form of any secret in `bytes` (decoded text of an archive member, a file name), or undefined. */
export function findInBytes(bytes: Buffer, matcher: Matcher): { secret: string; encoding: string } | undefined {
  for (const form of matcher.fixed.values()) if (bytes.includes(form.bytes)) return { secret: form.secret, encoding: form.encoding };
  const stripped = stripSeparators(bytes);
  for (const form of matcher.split) if (stripped.includes(form.stripped)) return { secret: form.secret, encoding: `${form.encoding}, split across lines` };
  if (matcher.url.length > 0 && bytes.includes('%')) {
    const decoded = percentDecode(bytes.toString('latin1'));
    for (const form of matcher.url) if (decoded.includes(form.value)) return { secret: form.secret, encoding: 'URL-encoded' };
  }
  return undefined;
}

/** NUL-separated fields. */
function fields(bytes: Buffer): string[] {
  const parts = bytes.toString('latin1').split('\0');
  parts.pop();
  return parts;
}

function failedSearch(step: string, result: { exitCode: number; stderr: Buffer }): DockhandError {
  return new DockhandError('internal', `searching the snapshot's layer for setup secrets failed at ${step} (exit ${result.exitCode}): ${result.stderr.toString('utf8').trim().slice(0, 500)}`);
}

// grep's "no match" and a file it could not read show as 123 through xargs; 124/125 are a grep
// cut off by head's output cap: the records before it stand.
const SEARCH_EXIT_CODES = new Set([0, 123, 124, 125, 141]);

/** Latin1 text (one character a byte) back to the path's own UTF-8. */
function pathOf(latin1: string): string {
  return Buffer.from(latin1, 'latin1').toString('utf8');
}

async function tarEntries(tar: Buffer): Promise<Array<{ path: string; data: Buffer }>> {
  const entries: Array<{ path: string; data: Buffer }> = [];
  const reader = extract();
  const done = new Promise<void>((resolve, reject) => {
    reader.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: unknown) => {
        if (Buffer.isBuffer(chunk)) chunks.push(chunk);
      });
      stream.on('end', () => {
        if (header.type === 'file') entries.push({ path: header.name.startsWith('/') ? header.name : `/${header.name}`, data: Buffer.concat(chunks) });
        next();
      });
      stream.on('error', reject);
    });
    reader.on('finish', resolve);
    reader.on('error', reject);
  });
  reader.end(tar);
  await done;
  return entries;
}

function zlibMember(data: Buffer): Buffer | undefined {
  try {
    return inflateSync(data, { maxOutputLength: MAX_INFLATED_BYTES });
  } catch {
    return undefined;
  }
}

/**
 * The changed paths (from `docker diff`, deletions left out) searched for every form of every
 * secret. Throws when the search itself cannot run (a missing tool, a timeout): the build fails
 * rather than keep a layer nobody searched.
 */
export async function searchLayer(shell: SearchShell, paths: readonly string[], secrets: readonly SetupSecret[], timeoutMs = 1_200_000): Promise<SetupSecretSearch> {
  const search: SetupSecretSearch = { found: [], unreadable: [], notes: [] };
  if (paths.length === 0 || secrets.length === 0) return search;
  const started = Date.now();
  const matcher = secretMatcher(secrets);
  const seen = new Set<string>();
  const report = (path: string, hit: { secret: string; encoding: string }): void => {
    const key = `${path}\0${hit.secret}`;
    if (seen.has(key)) return;
    seen.add(key);
    search.found.push({ path, secret: hit.secret, encoding: hit.encoding });
  };
  for (const path of paths) {
    const hit = findInBytes(Buffer.from(path, 'utf8'), matcher);
    if (hit) report(path, { secret: hit.secret, encoding: `${hit.encoding}, in the file's name` });
  }

  const list = await shell.raw(['bash', '-c', LIST_SCRIPT], { stdin: Buffer.from(paths.map((path) => `${path}\0`).join(''), 'utf8'), timeoutMs });
  const records = fields(list.stdout);
  if (list.exitCode !== 0 || records[0] !== 'D' || !records[1]) throw failedSearch('listing the files', list);
  const dir = pathOf(records[1]);
  let files = 0;
  let bytes = 0;
  const large: string[] = [];
  for (let at = 2; at < records.length; ) {
    const kind = records[at];
    if (kind === 'F') {
      const size = Number(records[at + 1]);
      files += 1;
      bytes += size;
      if (size > SPLIT_SEARCH_MAX_BYTES) large.push(pathOf(records[at + 2] ?? ''));
      at += 3;
    } else if (kind === 'L') {
      const target = records[at + 2] ?? '';
      const hit = findInBytes(Buffer.from(target, 'latin1'), matcher);
      if (hit) report(pathOf(records[at + 1] ?? ''), { secret: hit.secret, encoding: `${hit.encoding}, in a symlink's target` });
      at += 3;
    } else if (kind === 'U') {
      search.unreadable.push(pathOf(records[at + 1] ?? ''));
      at += 2;
    } else break;
  }
  // A path find could not reach (a directory made unsearchable) is as unreadable as a file.
  for (const match of list.stderr.toString('utf8').matchAll(/^find: ['‘](.*)['’]: Permission denied$/gm)) search.unreadable.push(match[1] ?? '');

  const literals = [...matcher.fixed.keys()].map((text) => [...text].map(ereLiteral).join(''));
  const wholePatterns = Buffer.from(`${[...literals, ...matcher.split.map((form) => splitPattern(form.text)), ...matcher.url.map((form) => form.pattern)].join('\n')}\n`, 'latin1');
  const whole = await shell.raw(['bash', '-c', WHOLE_SCRIPT, '_', dir], { stdin: wholePatterns, timeoutMs });
  if (!SEARCH_EXIT_CODES.has(whole.exitCode)) throw failedSearch('the search of the files', whole);
  const wholeRecords = fields(whole.stdout);
  for (let at = 0; at + 1 < wholeRecords.length; at += 2) {
    const match = wholeRecords[at + 1] ?? '';
    const path = pathOf(wholeRecords[at] ?? '');
    const form = matcher.fixed.get(match);
    if (form) {
      report(path, form);
      continue;
    }
    const split = matcher.split.find((candidate) => isSplitOf(match, candidate.text));
    if (split) report(path, { secret: split.secret, encoding: `${split.encoding}, split across lines` });
    const url = split ? undefined : matcher.url.find((candidate) => percentDecode(match) === candidate.value);
    if (url) report(path, { secret: url.secret, encoding: 'URL-encoded' });
  }

  if (large.length > 0) {
    const streamed = await shell.raw(['bash', '-c', LARGE_SCRIPT, '_', dir], { stdin: Buffer.from(`${[...matcher.fixed.keys()].join('\n')}\n`, 'latin1'), timeoutMs });
    if (!SEARCH_EXIT_CODES.has(streamed.exitCode)) throw failedSearch('the search of the large files', streamed);
    // `path\0match\n`: the path first (it may hold a line break), then the match up to the line's end.
    const text = streamed.stdout.toString('latin1');
    for (let at = 0; at < text.length; ) {
      const nul = text.indexOf('\0', at);
      const end = nul < 0 ? -1 : text.indexOf('\n', nul);
      if (end < 0) break;
      const form = matcher.fixed.get(text.slice(nul + 1, end));
      if (form) report(pathOf(text.slice(at, nul)), form);
      at = end + 1;
    }
  }

  const archives = await shell.raw(['bash', '-c', ARCHIVES_SCRIPT, '_', dir], { timeoutMs });
  if (archives.exitCode !== 0) throw failedSearch('reading the archives', archives);
  const entries = await tarEntries(archives.stdout);
  for (const entry of entries) {
    const zlib = entry.data[0] === 0x78 ? zlibMember(entry.data) : undefined;
    const kind = zlib ? 'zlib' : entry.data[0] === 0x1f ? 'gzip' : 'zip';
    const members = zlib ? [{ name: `${entry.path}!`, data: zlib }] : archiveMembers(entry.data, entry.path);
    for (const member of members) {
      const hit = findInBytes(member.data, matcher);
      if (hit) report(member.name.endsWith('!') ? entry.path : member.name, { secret: hit.secret, encoding: `${hit.encoding}, in a ${kind}` });
    }
    // Opening is synchronous: let the server answer between archives.
    await new Promise((resolve) => setImmediate(resolve));
  }
  const skipped = fields(archives.stderr);
  if (skipped.length > 0) {
    const named = [];
    for (let at = 0; at + 1 < skipped.length; at += 2) named.push(`${pathOf(skipped[at + 1] ?? '')} (${skipped[at]} bytes)`);
    search.notes.push(`setup secrets: ${named.length} archive(s) over the search's size (${ARCHIVE_MAX_BYTES} bytes each, ${ARCHIVES_MAX_TOTAL_BYTES} together) not opened: ${named.slice(0, 10).join(', ')}${named.length > 10 ? ', …' : ''}`);
  }
  if (large.length > 0) search.notes.push(`setup secrets: ${large.length} file(s) over ${SPLIT_SEARCH_MAX_BYTES} bytes searched for unsplit forms only: ${large.slice(0, 10).join(', ')}${large.length > 10 ? ', …' : ''}`);
  search.notes.push(`setup secrets: searched ${files} files (${(bytes / 1048576).toFixed(1)} MB) and ${entries.length} archive(s) for ${matcher.fixed.size} forms and ${matcher.split.length} split forms in ${Date.now() - started} ms`);
  return search;
}
