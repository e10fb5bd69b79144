import { applyPatch, parsePatch, type StructuredPatch } from 'diff';
import type { ChangedFile } from '@dockhand/protocol';

function stripPrefix(name: string | undefined): string | undefined {
  if (name === undefined || name === '/dev/null') return undefined;
  return name.replace(/^[ab]\//, '');
}

function pathOf(patch: StructuredPatch): string {
  return stripPrefix(patch.newFileName) ?? stripPrefix(patch.oldFileName) ?? '';
}

function changeOf(patch: StructuredPatch): ChangedFile['change'] {
  if (patch.isCreate || patch.oldFileName === '/dev/null') return 'added';
  if (patch.isDelete || patch.newFileName === '/dev/null') return 'deleted';
  return 'modified';
}

/** The files a unified diff touches. */
export function changedFiles(diff: string): ChangedFile[] {
  if (diff.trim() === '') return [];
  return parsePatch(diff)
    .map((patch) => ({ path: pathOf(patch), change: changeOf(patch) }))
    .filter((file) => file.path !== '');
}

/**
 * A file's contents after the diff, from its base contents. `null` when the diff deletes it or
 * when the patch does not apply (the caller reports that instead of guessing).
 */
export function contentAfter(diff: string, path: string, base: string | null): string | null | undefined {
  const patch = diff.trim() === '' ? undefined : parsePatch(diff).find((p) => pathOf(p) === path);
  if (!patch) return base;
  if (changeOf(patch) === 'deleted') return null;
  const result = applyPatch(base ?? '', patch);
  return result === false ? undefined : result;
}
