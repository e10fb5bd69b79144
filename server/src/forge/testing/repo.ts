import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** Small git helpers for the forge tests (the test's own commits, not the code under test). */

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: process.env['HOME'] ?? '/root',
      GIT_AUTHOR_NAME: 'Dev',
      GIT_AUTHOR_EMAIL: 'dev@example.invalid',
      GIT_COMMITTER_NAME: 'Dev',
      GIT_COMMITTER_EMAIL: 'dev@example.invalid',
    },
  }).trim();
}

export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
}

export const PAGINATE_BUGGY = [
  'export function paginate(items, page, size) {',
  '  const start = (page - 1) * size;',
  '  return items.slice(start, start + size - 1);',
  '}',
  '',
].join('\n');

export const PAGINATE_FIXED = PAGINATE_BUGGY.replace('start + size - 1', 'start + size');

/** A working repository with one commit on `main` holding the buggy paginate(). */
export function createSourceRepo(): { path: string; sha: string } {
  const path = mkdtempSync(join(tmpdir(), 'dockhand-forge-src-'));
  git(path, 'init', '-q', '-b', 'main');
  writeFiles(path, { 'src/paginate.js': PAGINATE_BUGGY, 'README.md': '# sample\n', LICENSE: 'MIT\n' });
  git(path, 'add', '-A');
  git(path, 'commit', '-q', '-m', 'initial');
  return { path, sha: git(path, 'rev-parse', 'HEAD') };
}

/** The diff a sandbox would hand back: `files` changed on top of the repo's HEAD. */
export function diffOf(repo: string, files: Record<string, string>): string {
  writeFiles(repo, files);
  git(repo, 'add', '-A');
  const diff = execFileSync('git', ['diff', '--cached', '--binary'], { cwd: repo, encoding: 'utf8' });
  git(repo, 'reset', '-q', '--hard', 'HEAD');
  return diff;
}

/**
 * A change with every kind of file operation (edit, add, binary add, delete, rename, mode change)
 * on top of HEAD: the diff and the tree git itself computes for it, which a faithful push must
 * reproduce exactly.
 */
export function mixedChange(repo: string): { diff: string; tree: string } {
  writeFiles(repo, { 'src/paginate.js': PAGINATE_FIXED, 'docs/notes.md': 'notes\n', 'scripts/run.sh': '#!/bin/sh\necho run\n' });
  mkdirSync(join(repo, 'assets'), { recursive: true });
  writeFileSync(join(repo, 'assets/logo.bin'), Buffer.from([0, 1, 2, 3, 255, 254, 0, 10, 13, 0]));
  chmodSync(join(repo, 'scripts/run.sh'), 0o755);
  git(repo, 'mv', 'README.md', 'docs/README.md');
  git(repo, 'rm', '-q', 'LICENSE');
  git(repo, 'add', '-A');
  const diff = execFileSync('git', ['diff', '--cached', '--binary'], { cwd: repo, encoding: 'utf8' });
  const tree = git(repo, 'write-tree');
  git(repo, 'reset', '-q', '--hard', 'HEAD');
  rmSync(join(repo, 'docs'), { recursive: true, force: true });
  return { diff, tree };
}
