import { posix } from 'node:path';
import { DockhandError } from '../errors';

export const WORKSPACE = '/workspace';

/**
 * Validates a workspace-relative path on the host side: no absolute paths, no `..` that leaves the
 * workspace, no NUL. Symlinks are resolved inside the container (`realpath`) by the caller, since
 * only the container knows where a link points. Returns the absolute in-container path.
 */
export function workspacePath(relative: string, field = 'path'): string {
  if (relative.includes('\0')) throw pathError(relative, field, 'contains a NUL byte');
  if (posix.isAbsolute(relative) || /^[a-zA-Z]:[\\/]/.test(relative) || relative.startsWith('\\')) {
    throw pathError(relative, field, 'is absolute; give a path relative to the workspace root');
  }
  const normalized = posix.normalize(relative === '' ? '.' : relative);
  if (normalized === '..' || normalized.startsWith('../')) {
    throw pathError(relative, field, 'leaves the workspace');
  }
  return normalized === '.' ? WORKSPACE : posix.join(WORKSPACE, normalized);
}

export function pathError(path: string, field: string, why: string): DockhandError {
  return new DockhandError('bad_request', `${field} "${path}" ${why}`, {
    field,
    hint: 'use a path inside the workspace, relative to its root',
  });
}

/**
 * A shell snippet that resolves "$1" (following every symlink) and fails with exit 3 when the
 * result lies outside the workspace. `-m` lets a not-yet-existing file (writeFile) resolve too.
 * Sets $resolved for the rest of the script.
 */
export const RESOLVE_INSIDE_WORKSPACE =
  `resolved=$(realpath -m -- "$1") || exit 3; ` +
  `case "$resolved" in ${WORKSPACE}|${WORKSPACE}/*) ;; *) echo "escapes the workspace: $resolved" >&2; exit 3;; esac`;
