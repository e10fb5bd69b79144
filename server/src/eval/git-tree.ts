import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/*
 * Read-only views of a repository on the server host at a commit, for making cassettes and
 * instances: files at a commit, and what a patch makes of them (`git apply --cached` on a
 * throw-away index, so the same rules decide whether it applies as in the grading sandbox).
 */

const GIT_ENV = {
  GIT_AUTHOR_NAME: 'Dockhand eval',
  GIT_AUTHOR_EMAIL: 'eval@dockhand.invalid',
  GIT_COMMITTER_NAME: 'Dockhand eval',
  GIT_COMMITTER_EMAIL: 'eval@dockhand.invalid',
};

export function git(repo: string, args: string[], options: { input?: string; env?: Record<string, string> } = {}): string {
  return execFileSync('git', ['-C', repo, ...args], {
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...GIT_ENV, ...options.env },
    ...(options.input !== undefined ? { input: options.input } : {}),
  });
}

/** The file's text at `sha`, or undefined when it does not exist there. */
export function showFile(repo: string, sha: string, path: string): string | undefined {
  try {
    return git(repo, ['show', `${sha}:${path}`]);
  } catch {
    return undefined;
  }
}

export function listFiles(repo: string, sha: string): string[] {
  return git(repo, ['ls-tree', '-r', '--name-only', sha]).split('\n').filter(Boolean);
}

export function hasCommit(repo: string, sha: string): boolean {
  try {
    git(repo, ['cat-file', '-e', `${sha}^{commit}`]);
    return true;
  } catch {
    return false;
  }
}

/**
 * The tree after applying `patches` in order on top of `sha`, as a new commit (nothing in the
 * repository's branches or working tree changes). Throws with git's message when one does not apply.
 */
export function commitPatches(repo: string, sha: string, patches: string[], message: string, date = '2026-01-01T00:00:00Z', reverse = false): string {
  const dir = mkdtempSync(join(tmpdir(), 'dockhand-eval-index-'));
  const env = { GIT_INDEX_FILE: join(dir, 'index'), GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date };
  try {
    git(repo, ['read-tree', sha], { env });
    for (const patch of patches) if (patch.trim() !== '') git(repo, ['apply', '--cached', '--whitespace=nowarn', ...(reverse ? ['-R'] : []), '-'], { input: patch, env });
    const tree = git(repo, ['write-tree'], { env }).trim();
    return git(repo, ['commit-tree', tree, '-p', sha, '-m', message], { env }).trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `git diff` between two commits, limited to `paths` when given. */
export function diffCommits(repo: string, from: string, to: string, paths?: string[]): string {
  return git(repo, ['diff', '--no-color', '--no-ext-diff', from, to, ...(paths ? ['--', ...paths] : [])]);
}

/** Files a change between two commits touches, with git's status letter (A, M, D). */
export function changedFiles(repo: string, from: string, to: string): Array<{ status: string; path: string }> {
  return git(repo, ['diff', '--name-status', '--no-renames', from, to])
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [status = '', path = ''] = line.split('\t');
      return { status: status.slice(0, 1), path };
    });
}

/** A commit on top of `sha` with `files` written (text) or removed (null); nothing else changes. */
export function commitFiles(repo: string, sha: string, files: Record<string, string | null>, message: string, date = '2026-01-01T00:00:00Z'): string {
  const dir = mkdtempSync(join(tmpdir(), 'dockhand-eval-index-'));
  const env = { GIT_INDEX_FILE: join(dir, 'index'), GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date };
  try {
    git(repo, ['read-tree', sha], { env });
    for (const [path, text] of Object.entries(files)) {
      if (text === null) {
        git(repo, ['update-index', '--force-remove', '--', path], { env });
        continue;
      }
      const blob = git(repo, ['hash-object', '-w', '--stdin'], { input: text }).trim();
      git(repo, ['update-index', '--add', '--cacheinfo', `100644,${blob},${path}`], { env });
    }
    const tree = git(repo, ['write-tree'], { env }).trim();
    return git(repo, ['commit-tree', tree, '-p', sha, '-m', message], { env }).trim();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A planted instance's base: `sha` with its `patch` and `test_patch` taken back (the mutation in,
 * the judging tests out), as one commit with a fixed message, author and date, so the same
 * instance line gives the same base_commit on every machine whose `sha` is the same.
 */
export function plantedBase(repo: string, sha: string, instanceId: string, patch: string, testPatch: string): string {
  return commitPatches(repo, sha, [testPatch, patch], `eval base of ${instanceId}`, '2026-01-01T00:00:00Z', true);
}

export function treeOf(repo: string, sha: string): string {
  return git(repo, ['rev-parse', `${sha}^{tree}`]).trim();
}
