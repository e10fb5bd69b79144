/*
 * A PR line comment's `path` is a file name of the repository as git lists it: literal,
 * repository-relative, one `/` between folders. It is checked here, at the API's boundary, so a
 * hostile value (`../../etc/passwd`, `/etc/passwd`, a NUL) is a 400 naming `path` instead of a git
 * error; the forge then asks git with literal pathspecs (no `*`, no `:(glob)` magic) whether the
 * PR's diff changes exactly that file (`forge/comments.ts`).
 */

/** What is wrong with `path` as a repository-relative file name, or undefined when nothing is. */
export function commentPathProblem(path: string): string | undefined {
  // Control characters (NUL first) are never part of a file name a reviewer typed.
  if (/[\u0000-\u001f\u007f]/.test(path)) return 'contains a control character (NUL, newline, tab…); give the file\'s name as the PR\'s diff shows it';
  if (path.startsWith('/')) return 'is absolute; give the file\'s path inside the repository, such as src/app.js';
  if (path.includes('\\')) return 'contains a backslash; separate folders with /, such as src/app.js';
  const segments = path.split('/');
  if (segments.some((segment) => segment === '..')) return 'leaves the repository with ..; give the file\'s path inside the repository, such as src/app.js';
  if (segments.some((segment) => segment === '.' || segment === '')) return 'has an empty or "." folder (//, ./, a trailing /); give the file\'s path as the PR\'s diff shows it, such as src/app.js';
  return undefined;
}
