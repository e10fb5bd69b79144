import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

/** Builds (or finds, by recipe hash) the sandbox base image; integration tests call it first. */
export function ensureBaseImage(): void {
  const script = resolve(import.meta.dirname, '../../../sandbox-images/base/build.sh');
  execFileSync('bash', [script], { stdio: ['ignore', 'ignore', 'inherit'] });
}

/** A fresh git repository (branch main, one commit) holding `files`; returns its path and HEAD. */
export function createRepoFromFiles(files: Record<string, string | Buffer>): { path: string; sha: string; commit: (more: Record<string, string | Buffer>, message: string) => string } {
  const dir = mkdtempSync(join(tmpdir(), 'dockhand-repo-'));
  const git = (...args: string[]): string =>
    execFileSync('git', args, {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, GIT_AUTHOR_NAME: 'Fixture', GIT_AUTHOR_EMAIL: 'fixture@dockhand.invalid', GIT_COMMITTER_NAME: 'Fixture', GIT_COMMITTER_EMAIL: 'fixture@dockhand.invalid' },
    }).trim();
  const write = (more: Record<string, string | Buffer>): void => {
    for (const [path, content] of Object.entries(more)) {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), content);
    }
  };
  write(files);
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'fixture');
  return {
    path: dir,
    sha: git('rev-parse', 'HEAD'),
    commit(more, message) {
      write(more);
      git('add', '-A');
      git('commit', '-q', '-m', message);
      return git('rev-parse', 'HEAD');
    },
  };
}

/** Toolchains for integration tests, shared across test files and runs (like a server's data directory). */
export const TEST_TOOLCHAIN_DIR = join(tmpdir(), 'dockhand-test-toolchains');
