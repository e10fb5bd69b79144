import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { INSTALL_MADE_FUNCTION, INSTALL_MADE_SEPARATOR, installMadeSet } from '../sandbox/install-made';
import type { Sandbox } from '../sandbox/types';

/** Files whose text the import analysis reads. Everything else is only listed. */
export const SOURCE_EXTENSIONS = ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs', '.py'];
const READ_PATTERN = '([.](ts|tsx|mts|cts|js|jsx|mjs|cjs|py)|(^|/)(package|jsconfig|tsconfig[^/]*)[.]json)$';

export function isSourcePath(path: string): boolean {
  return SOURCE_EXTENSIONS.some((ext) => path.endsWith(ext)) && !path.endsWith('.d.ts');
}

/** The repo as committed at the base SHA: every path, and the text of the files the analysis reads. */
export interface BaseSnapshot {
  baseSha: string;
  files: string[];
  contents: Map<string, string>;
}

/**
 * Reads the base commit out of the sandbox in ONE exec: the tree listing plus the blobs of the
 * source and manifest files (`git cat-file --batch`, gzipped and base64-encoded so it survives a
 * text stdout). Reading the committed tree (not the working tree) makes the result a pure
 * function of the SHA, hence cacheable; the workspace's edits are layered on top by
 * `readWorkspaceChanges`. Needs only git, awk, gzip and base64 in the sandbox, no Node or Python.
 */
export async function readBaseSnapshot(sandbox: Sandbox, baseSha: string): Promise<BaseSnapshot> {
  const script =
    'set -e -o pipefail; tree=$(git ls-tree -r -z "$0" | base64 -w0); echo "$tree"; ' +
    'printf "%s" "$tree" | base64 -d | tr "\\0" "\\n" | ' +
    `awk -F'\\t' -v pattern="$1" '{ split($1, meta, " ") } meta[2] == "blob" && $2 ~ pattern { print meta[3] }' | ` +
    'git cat-file --batch | gzip -1 | base64 -w0';
  const result = await sandbox.exec({
    cmd: ['bash', '-c', script, baseSha, READ_PATTERN],
    outputCapBytes: 512 * 1024 * 1024,
    timeoutMs: 120_000,
  });
  if (result.exitCode !== 0 || result.truncated) {
    throw new Error(`reading base ${baseSha} failed (exit ${result.exitCode}): ${result.stderr.slice(0, 500)}`);
  }
  const [listing = '', batch = ''] = result.stdout.split('\n');
  const blobs = parseBatch(gunzipSync(Buffer.from(batch.trim(), 'base64')));
  const files: string[] = [];
  const contents = new Map<string, string>();
  for (const line of Buffer.from(listing, 'base64').toString('utf8').split('\0')) {
    const tab = line.indexOf('\t');
    if (tab < 0) continue;
    const path = line.slice(tab + 1);
    files.push(path);
    const blob = blobs.get(line.slice(0, tab).split(' ')[2] ?? '');
    if (blob !== undefined) contents.set(path, blob);
  }
  return { baseSha, files, contents };
}

/** `git cat-file --batch` output: `<oid> blob <size>\n<bytes>\n` repeated. */
function parseBatch(data: Buffer): Map<string, string> {
  const blobs = new Map<string, string>();
  let offset = 0;
  while (offset < data.length) {
    const newline = data.indexOf(10, offset);
    if (newline < 0) break;
    const [oid = '', type = '', size = '0'] = data.subarray(offset, newline).toString('utf8').split(' ');
    if (type === 'missing') {
      offset = newline + 1;
      continue;
    }
    const end = newline + 1 + Number(size);
    blobs.set(oid, data.subarray(newline + 1, end).toString('utf8'));
    offset = end + 1;
  }
  return blobs;
}

export interface WorkspaceChanges {
  /** Added or modified paths (tracked changes and untracked, not ignored, files). */
  changed: string[];
  deleted: string[];
  /** Current text of changed source/manifest files. */
  contents: Map<string, string>;
}

/**
 * What the workspace changed against the base: `git diff --name-status <base>` plus untracked
 * files, less the paths the snapshot's install made that still hold what it made (install-made.ts).
 */
export async function readWorkspaceChanges(sandbox: Sandbox, baseSha: string): Promise<WorkspaceChanges> {
  const result = await sandbox.exec({
    cmd: [
      'bash',
      '-c',
      `set -e; ${INSTALL_MADE_FUNCTION}\n` +
        `git diff --name-status -z --no-renames "$0"; printf "\\0--untracked--\\0"; git ls-files -z --others --exclude-standard; printf '\\0${INSTALL_MADE_SEPARATOR}\\0'; dockhand_install_made`,
      baseSha,
    ],
    outputCapBytes: 16 * 1024 * 1024,
  });
  if (result.exitCode !== 0) throw new Error(`git diff against ${baseSha} failed: ${result.stderr.slice(0, 500)}`);
  const [listed = '', installMade = ''] = result.stdout.split(`\0${INSTALL_MADE_SEPARATOR}\0`);
  const [tracked = '', untracked = ''] = listed.split('\0--untracked--\0');
  const made = installMadeSet(installMade);
  const changed: string[] = [];
  const deleted: string[] = [];
  const parts = tracked.split('\0').filter(Boolean);
  for (let index = 0; index + 1 < parts.length; index += 2) {
    const status = parts[index] ?? '';
    const path = parts[index + 1] ?? '';
    if (made.has(path)) continue;
    if (status.startsWith('D')) deleted.push(path);
    else changed.push(path);
  }
  changed.push(...untracked.split('\0').filter((path) => path !== '' && !made.has(path)));
  const contents = new Map<string, string>();
  for (const path of changed) {
    if (isSourcePath(path) || /(^|\/)(package\.json|tsconfig[^/]*\.json|jsconfig\.json)$/.test(path)) {
      contents.set(path, (await sandbox.readFile(path)).toString('utf8'));
    }
  }
  return { changed: [...new Set(changed)].sort(), deleted: deleted.sort(), contents };
}

/** Beyond this many changed files the workspace is identified by its whole diff instead. */
const MAX_HASHED_FILES = 500;

/**
 * Identifies the workspace state: two runs with the same hash ran on the same code. Taken from
 * the changes `readWorkspaceChanges` listed against the base: the deleted paths, and each changed
 * path with its bytes, read through the sandbox's file channel. That costs no process in the
 * sandbox, where the whole diff (`Sandbox.diff`: a throwaway index, `git add -A`, `git diff`) cost
 * five processes, about 0.4 s under gVisor, on every test run. A change of mode alone tells two
 * states from the base but not from each other. Many changed files, or one that cannot be read:
 * the whole diff's hash.
 */
export async function workspaceHash(sandbox: Sandbox, changes: WorkspaceChanges): Promise<string> {
  if (changes.changed.length + changes.deleted.length <= MAX_HASHED_FILES) {
    try {
      const hash = createHash('sha256').update(`${sandbox.baseSha}\0`);
      for (const path of changes.deleted) hash.update(`D\0${path}\0`);
      for (let start = 0; start < changes.changed.length; start += 16) {
        const paths = changes.changed.slice(start, start + 16);
        const contents = await Promise.all(paths.map((path) => sandbox.readFile(path)));
        paths.forEach((path, index) => {
          const bytes = contents[index] ?? Buffer.alloc(0);
          hash.update(`M\0${path}\0${bytes.length}\0`).update(bytes);
        });
      }
      return hash.digest('hex').slice(0, 16);
    } catch {
      // A file that went away or cannot be read (a link out of the workspace): the whole diff.
    }
  }
  return createHash('sha256').update(await sandbox.diff()).digest('hex').slice(0, 16);
}
