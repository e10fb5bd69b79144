import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

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
 * fixed so the SHA of an unchanged fixture is the same on every machine.
 */
export function createFixtureRepo(name: string, into?: string): FixtureRepo {
  const dir = into ?? mkdtempSync(join(tmpdir(), `dockhand-fixture-${name}-`));
  cpSync(join(FIXTURES_DIR, name), dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', `fixture ${name}`);
  const repo: FixtureRepo = {
    path: dir,
    sha: git(dir, 'rev-parse', 'HEAD'),
    commit(files, message) {
      for (const [rel, content] of Object.entries(files)) {
        const target = join(dir, rel);
        execFileSync('mkdir', ['-p', resolve(target, '..')]);
        writeFileSync(target, content);
      }
      git(dir, 'add', '-A');
      git(dir, 'commit', '-q', '-m', message);
      repo.sha = git(dir, 'rev-parse', 'HEAD');
      return repo.sha;
    },
  };
  return repo;
}

