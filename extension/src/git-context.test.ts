import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFixtureRepo } from '../../test/support/fixture-repo';
import { temporaryDir } from '../../test/support/temporary-dirs';
import { readGitState } from './git-context';

const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, encoding: 'utf8' }).trim();

describe('readGitState (real git)', () => {
  it('reads HEAD, branch and a clean tree; the path stands in for a missing remote', async () => {
    const repo = createFixtureRepo('buggy-calc');
    const state = await readGitState(join(repo.path, 'src'));
    expect(state).toEqual({ root: repo.path, repo: repo.path, hasRemote: false, branch: 'main', headSha: repo.sha, dirty: false, pushed: false });
  });

  it('notices uncommitted changes and whether HEAD is on the remote', async () => {
    const repo = createFixtureRepo('buggy-calc');
    const remote = temporaryDir('dockhand-remote-');
    git(remote, 'init', '-q', '--bare');
    git(repo.path, 'remote', 'add', 'origin', remote);
    git(repo.path, 'push', '-q', 'origin', 'main');
    git(repo.path, 'fetch', '-q', 'origin');
    expect(await readGitState(repo.path)).toMatchObject({ repo: remote, hasRemote: true, pushed: true, dirty: false });
    repo.commit({ 'NOTES.md': 'local only\n' }, 'local commit');
    writeFileSync(join(repo.path, 'scratch.txt'), 'x');
    expect(await readGitState(repo.path)).toMatchObject({ headSha: repo.sha, pushed: false, dirty: true });
  });

  it('explains a folder that is not a repository', async () => {
    await expect(readGitState(temporaryDir('not-a-repo-'))).rejects.toThrow(/is not inside a git repository/);
  });
});

describe('applyDiffOnNewBranch (real git)', () => {
  it('puts the agent diff on a new branch from the base, staged', async () => {
    const { applyDiffOnNewBranch } = await import('./git-context');
    const repo = createFixtureRepo('buggy-calc');
    const base = repo.sha;
    repo.commit({ 'NOTES.md': 'moved on\n' }, 'developer kept working');
    const diff = `diff --git a/src/calc.js b/src/calc.js
--- a/src/calc.js
+++ b/src/calc.js
@@ -14,3 +14,3 @@
   let total = 0;
-  for (let index = 1; index < values.length; index += 1) {
+  for (let index = 0; index < values.length; index += 1) {
     total += values[index];
`;
    await applyDiffOnNewBranch(repo.path, { branch: 'dockhand/task-1', baseSha: base, diff });
    expect(git(repo.path, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('dockhand/task-1');
    expect(git(repo.path, 'rev-parse', 'HEAD')).toBe(base);
    expect(git(repo.path, 'diff', '--cached', '--name-only')).toBe('src/calc.js');
    expect(git(repo.path, 'show', ':src/calc.js')).toContain('let index = 0;');
  });

  it('refuses a dirty tree', async () => {
    const { applyDiffOnNewBranch } = await import('./git-context');
    const repo = createFixtureRepo('buggy-calc');
    writeFileSync(join(repo.path, 'src/calc.js'), 'local edit\n');
    await expect(applyDiffOnNewBranch(repo.path, { branch: 'x', baseSha: repo.sha, diff: 'diff' })).rejects.toThrow(/uncommitted changes/);
  });
});
