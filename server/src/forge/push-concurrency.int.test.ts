import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalForge } from './local-forge';
import { InMemoryPullRequestStore } from './memory-store';
import { pushChange } from './push';
import { createSourceRepo, diffOf, git, PAGINATE_FIXED } from './testing/repo';

/*
 * Tasks on the same repo share the server's one clone of it (`publisherPort`: one clone per
 * repo). Pushes that start at the same moment must not interleave their git commands in it:
 * without the per-clone queue in `pushChange`, first-use `git init`s failed with "could not lock
 * config file" (9 runs of 10) and fetches into the existing clone with "cannot lock ref" (5 of 5).
 */
describe('pushChange into one clone, many at once', () => {
  let root: string;
  let source: { path: string; sha: string };
  let bare: string;

  beforeEach(async () => {
    root = mkdtempSync(join(tmpdir(), 'dockhand-push-many-'));
    source = createSourceRepo();
    const forge = new LocalForge({ dataDir: join(root, 'forge'), store: new InMemoryPullRequestStore() });
    bare = await forge.createRepository('sample', source.path);
    // Branches on the remote, so every first fetch into the fresh clone writes several refs.
    for (let i = 0; i < 20; i++) git(bare, 'branch', `feature/${i}`, source.sha);
  });

  afterEach(() => {
    rmSync(root, { recursive: true, force: true });
    rmSync(source.path, { recursive: true, force: true });
  });

  /** Starts `count` pushes of different branches at once; checks each landed exactly its change. */
  async function pushTogether(cloneDir: string, baseSha: string, round: string, count: number): Promise<void> {
    const changes = Array.from({ length: count }, (_, i) => ({
      branch: `dockhand/${round}-${i + 1}`,
      file: `notes/${round}-${i + 1}.md`,
      text: `note ${round} ${i + 1}`,
    }));
    const diffs = changes.map((change) => diffOf(source.path, { 'src/paginate.js': PAGINATE_FIXED, [change.file]: `${change.text}\n` }));

    const results = await Promise.allSettled(
      changes.map((change, i) => pushChange({ cloneDir, remoteUrl: bare, baseSha, diff: diffs[i]!, branch: change.branch, message: change.branch })),
    );

    const failures = results.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : []));
    expect(failures).toEqual([]);
    for (const [i, change] of changes.entries()) {
      const result = results[i];
      if (result?.status !== 'fulfilled') throw new Error('unreachable: failures were checked above');
      expect(result.value).toMatchObject({ branch: change.branch, pushed: true });
      // The remote branch is this push's commit, on the base, with exactly this change.
      expect(git(bare, 'rev-parse', `refs/heads/${change.branch}`)).toBe(result.value.headSha);
      expect(git(bare, 'rev-parse', `${result.value.headSha}^`)).toBe(baseSha);
      expect(git(bare, 'show', `${change.branch}:${change.file}`)).toBe(change.text);
      expect(git(bare, 'diff', '--name-only', baseSha, change.branch).split('\n').sort()).toEqual([change.file, 'src/paginate.js'].sort());
    }
    // Nothing left behind in the shared clone: only the clone itself, no stray worktrees.
    expect(git(cloneDir, 'worktree', 'list', '--porcelain').match(/^worktree /gm)).toHaveLength(1);
  }

  it('lands every branch intact when pushes of different branches start together', async () => {
    const cloneDir = join(root, 'clone');
    // First use: every push finds no clone yet and must fetch the base.
    await pushTogether(cloneDir, source.sha, 'first', 8);

    // The base moves on: every push into the existing clone fetches again.
    git(source.path, 'commit', '-q', '--allow-empty', '-m', 'next base');
    git(source.path, 'push', '-q', bare, 'HEAD:main');
    await pushTogether(cloneDir, git(source.path, 'rev-parse', 'HEAD'), 'second', 8);
  });
});
