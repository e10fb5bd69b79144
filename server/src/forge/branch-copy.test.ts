import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import { LocalForge } from './local-forge';
import { InMemoryPullRequestStore } from './memory-store';

/*
 * Registering from a partial clone (census: moment/luxon's clone lacked big blobs of gh-pages,
 * and `repo add` failed whole with "fetch-pack: invalid index-pack output"), on real git: the
 * complete branches are copied and the incomplete one is named; an incomplete default branch is
 * refused with the reason and the action.
 */

const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' }).trim();

/** A clone made with --filter=blob:limit=1k whose upstream is gone: `big` branch's 4 KiB blob is missing. */
function partialClone(checkout: string) {
  const root = temporaryDir('dockhand-branch-copy-');
  const upstream = join(root, 'upstream');
  mkdirSync(upstream);
  git(upstream, 'init', '-q', '-b', 'main');
  writeFileSync(join(upstream, 'a.txt'), 'small\n');
  git(upstream, 'add', '-A');
  git(upstream, 'commit', '-q', '-m', 'small');
  git(upstream, 'checkout', '-q', '-b', 'big');
  writeFileSync(join(upstream, 'big.bin'), 'x'.repeat(4096));
  git(upstream, 'add', '-A');
  git(upstream, 'commit', '-q', '-m', 'big');
  git(upstream, 'checkout', '-q', 'main');
  git(upstream, 'config', 'uploadpack.allowFilter', 'true');
  const clone = join(root, 'clone');
  git(root, 'clone', '-q', '--no-checkout', '--filter=blob:limit=1k', `file://${upstream}`, clone);
  git(clone, 'checkout', '-q', '-B', checkout, `origin/${checkout}`);
  // As with a mirror that lacks the objects too: nowhere to fetch them from lazily.
  git(clone, 'remote', 'set-url', 'origin', join(root, 'gone'));
  return { root, clone };
}

describe('copying the branches of a partial clone', { timeout: 60_000 }, () => {
  it('copies the complete branches and names the one whose history lacks objects', async () => {
    const { root, clone } = partialClone('main');
    const forge = new LocalForge({ dataDir: join(root, 'forge'), store: new InMemoryPullRequestStore() });
    const said: string[] = [];
    await forge.createRepository('app', clone, { defaultBranch: 'main', onSkipped: (summary) => said.push(summary) });
    expect(await forge.hasBranch('app', 'main')).toBe(true);
    expect(await forge.defaultBranch('app')).toBe('main');
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/not copied from .*clone: big \(the source lacks objects of this branch's history/);
    // A later refresh (a check without --sha) meets the same source and copies what it can.
    const branches = await forge.refreshFrom('app', clone, { onSkipped: (summary) => said.push(summary) });
    expect(branches.get('main')).toBe(git(clone, 'rev-parse', 'main'));
    expect(said[1]).toMatch(/not copied .*: big /);
  });

  it('refuses a copy whose default branch lacks objects, saying why and what to do', async () => {
    const { root, clone } = partialClone('main');
    git(clone, 'branch', '-q', '-f', 'big', 'origin/big');
    const forge = new LocalForge({ dataDir: join(root, 'forge'), store: new InMemoryPullRequestStore() });
    await expect(forge.createRepository('app', clone, { defaultBranch: 'big' })).rejects.toThrow(/default branch big of .*clone could not be copied: the source lacks objects/);
  });
});
