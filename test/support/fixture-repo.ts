import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { temporaryDir } from './temporary-dirs';

export const FIXTURES_DIR = resolve(import.meta.dirname, '../fixtures');

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 'Fixture',
      GIT_AUTHOR_EMAIL: 'fixture@dockhand.invalid',
      GIT_COMMITTER_NAME: 'Fixture',
      GIT_COMMITTER_EMAIL: 'fixture@dockhand.invalid',
      GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
      GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
    },
  }).trim();
}

export interface FixtureRepo {
  /** Working clone with the fixture committed on `main`. */
  path: string;
  /** The commit holding the fixture as checked in. */
  sha: string;
  /** Commits a change (files relative to the repo) and returns the new SHA. */
  commit(files: Record<string, string>, message: string): string;
}

/**
 * Copies test/fixtures/<name> into a fresh temporary git repository with one commit on `main`.
 * Fixtures are plain folders in this repo (a nested .git cannot be committed); the commit date is
 * fixed so the SHA of an unchanged fixture is the same on every machine. Without `into`, the
 * repository is a temporaryDir: removed when the test file ends.
 */
export function createFixtureRepo(name: string, into?: string): FixtureRepo {
  const dir = into ?? temporaryDir(`dockhand-fixture-${name}-`);
  cpSync(join(FIXTURES_DIR, name), dir, { recursive: true });
  return commitRepo(dir, `fixture ${name}`);
}

/**
 * A fresh temporary git repository of `files` (paths relative to its root), committed on `main`
 * with `message`: a repository a test writes out instead of a fixture folder. Dated as the
 * fixtures are, so the same files and message give the same SHA on every run and machine.
 * Removed when the test file ends, as createFixtureRepo's.
 */
export function createRepoOfFiles(name: string, files: Record<string, string>, message: string): FixtureRepo {
  const dir = temporaryDir(`dockhand-${name}-`);
  writeFiles(dir, files);
  return commitRepo(dir, message);
}

function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [rel, content] of Object.entries(files)) {
    const target = join(dir, rel);
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, content);
  }
}

/** `git init` in `dir` and one commit of all it holds. */
function commitRepo(dir: string, message: string): FixtureRepo {
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', message);
  const repo: FixtureRepo = {
    path: dir,
    sha: git(dir, 'rev-parse', 'HEAD'),
    commit(files, commitMessage) {
      writeFiles(dir, files);
      git(dir, 'add', '-A');
      git(dir, 'commit', '-q', '-m', commitMessage);
      repo.sha = git(dir, 'rev-parse', 'HEAD');
      return repo.sha;
    },
  };
  return repo;
}
