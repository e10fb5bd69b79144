import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DockhandError } from '../errors';
import { gitBaseFiles } from './wiring';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function repo(): { dir: string; commit(files: Record<string, string>): string } {
  const dir = mkdtempSync(join(tmpdir(), 'dockhand-base-files-'));
  dirs.push(dir);
  const git = (...args: string[]) => execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { encoding: 'utf8' }).trim();
  git('init', '-q');
  return {
    dir,
    commit(files) {
      for (const [path, content] of Object.entries(files)) {
        mkdirSync(join(dir, path, '..'), { recursive: true });
        writeFileSync(join(dir, path), content);
      }
      git('add', '-A');
      git('commit', '-q', '-m', 'c');
      return git('rev-parse', 'HEAD');
    },
  };
}

describe('gitBaseFiles', () => {
  it('reads a file at a commit, null for a path the commit lacks, and refuses a directory naming path', async () => {
    const r = repo();
    const sha = r.commit({ '.dockhand/policy.yml': 'protected: []\n', 'src/a.js': 'é\n' });
    const files = gitBaseFiles(() => r.dir);
    expect(await files.read('app', sha, '.dockhand/policy.yml')).toBe('protected: []\n');
    expect(await files.read('app', sha, 'src/a.js')).toBe('é\n');
    expect(await files.read('app', sha, 'nope.txt')).toBeNull();
    await expect(files.read('app', sha, 'src')).rejects.toMatchObject({ code: 'bad_request', field: 'path' } satisfies Partial<DockhandError>);
    expect(await files.read('app', sha, 'bad\npath')).toBeNull();
  });

  it('keeps what it read at a full SHA (content and absence), so the repository is not asked again', async () => {
    const r = repo();
    const sha = r.commit({ 'a.txt': 'one\n' });
    const files = gitBaseFiles(() => r.dir);
    expect(await files.read('app', sha, 'a.txt')).toBe('one\n');
    expect(await files.read('app', sha, 'absent.yml')).toBeNull();
    rmSync(join(r.dir, '.git'), { recursive: true, force: true });
    expect(await files.read('app', sha, 'a.txt')).toBe('one\n');
    expect(await files.read('app', sha, 'absent.yml')).toBeNull();
    // Not remembered under a name that can move (a branch), nor for a path asked for the first time.
    expect(await files.read('app', 'HEAD', 'a.txt')).toBeNull();
    expect(await files.read('app', sha, 'other.txt')).toBeNull();
  });

  it('does not remember "missing" for a commit that has not reached the repository yet', async () => {
    const source = repo();
    const sha = source.commit({ 'policy.yml': 'x: 1\n' });
    const mirror = repo();
    mirror.commit({ 'other.txt': 'o\n' });
    const files = gitBaseFiles(() => mirror.dir);
    expect(await files.read('app', sha, 'policy.yml')).toBeNull();
    execFileSync('git', ['-C', mirror.dir, 'fetch', '-q', source.dir, 'HEAD']);
    expect(await files.read('app', sha, 'policy.yml')).toBe('x: 1\n');
  });
});
