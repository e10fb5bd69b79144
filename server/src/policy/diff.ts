import { parsePatch } from 'diff';

/**
 * A unified diff (as `git diff` writes it) reduced to what the policy needs: which paths changed,
 * how, and the added lines with their line numbers in the new file. Removed lines are only
 * counted: a secret that is being deleted is not a new leak.
 */

export type FileChange = 'added' | 'modified' | 'deleted' | 'renamed';

export interface AddedLine {
  /** 1-based line number in the new version of the file. */
  line: number;
  text: string;
}

export interface ChangedFile {
  /** Path in the new tree (the old path for a deletion), without the `a/` / `b/` prefix. */
  path: string;
  /** Set for renames and copies: the path before. */
  oldPath?: string;
  change: FileChange;
  binary: boolean;
  added: AddedLine[];
  removedCount: number;
  /** The removed lines (numbered in the old file), for rules that tell a change from an addition. */
  removed: AddedLine[];
}

const DEV_NULL = '/dev/null';

function stripPrefix(name: string | undefined, prefix: 'a/' | 'b/'): string | undefined {
  if (name === undefined || name === '' || name === DEV_NULL) return undefined;
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

export function parseUnifiedDiff(diff: string): ChangedFile[] {
  if (diff.trim() === '') return [];
  const files: ChangedFile[] = [];
  for (const patch of parsePatch(diff)) {
    const oldPath = stripPrefix(patch.oldFileName, 'a/');
    const newPath = stripPrefix(patch.newFileName, 'b/');
    const path = newPath ?? oldPath;
    if (path === undefined) continue;
    const change: FileChange =
      patch.isCreate || oldPath === undefined
        ? 'added'
        : patch.isDelete || newPath === undefined
          ? 'deleted'
          : patch.isRename || patch.isCopy || oldPath !== newPath
            ? 'renamed'
            : 'modified';
    const added: AddedLine[] = [];
    const removed: AddedLine[] = [];
    let removedCount = 0;
    for (const hunk of patch.hunks) {
      let lineNumber = hunk.newStart;
      let oldLine = hunk.oldStart;
      for (const raw of hunk.lines) {
        const marker = raw[0];
        if (marker === '+') {
          added.push({ line: lineNumber, text: raw.slice(1) });
          lineNumber += 1;
        } else if (marker === '-') {
          removedCount += 1;
          removed.push({ line: oldLine, text: raw.slice(1) });
          oldLine += 1;
        } else if (marker === ' ') {
          lineNumber += 1;
          oldLine += 1;
        }
        // '\' ("No newline at end of file") neither adds nor advances.
      }
    }
    const file: ChangedFile = { path, change, binary: patch.isBinary === true, added, removedCount, removed };
    if (change === 'renamed' && oldPath !== undefined) file.oldPath = oldPath;
    files.push(file);
  }
  return files;
}
