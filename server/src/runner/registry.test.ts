import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import { LocalForge } from '../forge/local-forge';
import { RepoMirror } from '../sandbox/mirror';
import { SqliteStore } from '../store/sqlite';
import type { SandboxProvider } from './ports';
import { ReadinessChecks } from './readiness';
import { registeredSource, RepoRegistry } from './registry';

/*
 * Registering a clone checked out at a commit (detached HEAD), on real git, with the local forge:
 * the default branch comes from the clone's origin HEAD or its branches; the registration stores
 * it, the forge copy's HEAD names it (and has it), and a check without a SHA checks its head.
 */

const ADMIN = { name: 'root', role: 'admin' as const, createdAt: '' };
const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' }).trim();

describe('registering a clone whose HEAD is detached', { timeout: 60_000 }, () => {
  const closers: Array<() => void> = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });

  /** A repository on `master` with two commits, cloned and checked out at the first (detached). */
  function detachedClone(options: { keepLocalBranch: boolean; setOriginHead?: boolean; extraBranches?: string[] }) {
    const root = temporaryDir('dockhand-registry-');
    const upstream = join(root, 'upstream');
    mkdirSync(upstream);
    git(upstream, 'init', '-q', '-b', 'master');
    writeFileSync(join(upstream, 'a.txt'), 'one\n');
    git(upstream, 'add', '-A');
    git(upstream, 'commit', '-q', '-m', 'one');
    writeFileSync(join(upstream, 'a.txt'), 'two\n');
    git(upstream, 'commit', '-q', '-am', 'two');
    const head = git(upstream, 'rev-parse', 'HEAD');
    for (const branch of options.extraBranches ?? []) git(upstream, 'branch', branch);
    git(root, 'clone', '-q', upstream, 'clone');
    const clone = join(root, 'clone');
    git(clone, 'checkout', '-q', '--detach', 'HEAD~1');
    if (!options.keepLocalBranch) git(clone, 'branch', '-q', '-D', 'master');
    if (options.setOriginHead === false) git(clone, 'remote', 'set-head', 'origin', '--delete');
    const store = new SqliteStore(':memory:');
    closers.push(() => store.close());
    const mirror = new RepoMirror(join(root, 'data'), { sources: registeredSource(store) });
    const localForge = new LocalForge({ dataDir: join(root, 'data/forge'), store: store.pullRequests });
    const registry = new RepoRegistry({ store, mirror, localForge });
    const sandboxes: SandboxProvider = { acquire: () => Promise.reject(new Error('no sandboxes in this test')), release: async () => undefined };
    const checks = new ReadinessChecks({ registry, sandboxes, feedback: () => { throw new Error('not reached'); } });
    closers.push(() => checks.close());
    return { clone, head, store, registry, localForge, checks };
  }

  it.each([
    ['with its local master branch kept', true],
    ['with no local branch at all (only origin/master)', false],
  ])('%s: stores master, the forge copy has it as HEAD, and a check without --sha checks its head', async (_name, keepLocalBranch) => {
    const { clone, head, store, registry, localForge, checks } = detachedClone({ keepLocalBranch });
    const { registration } = await registry.register({ name: 'shop', source: clone }, ADMIN);

    expect(registration.defaultBranch).toBe('master');
    expect((await store.getRepo('shop'))?.defaultBranch).toBe('master');
    const forge = localForge.repositoryPath('shop');
    expect(git(forge, 'symbolic-ref', 'HEAD')).toBe('refs/heads/master');
    expect(git(forge, 'rev-parse', 'refs/heads/master')).toBe(head);

    const status = await checks.start(registration);
    expect(status).toMatchObject({ sha: head, head: { branch: 'master', source: clone } });
  });

  it('without an origin HEAD, takes main or master among several branches', async () => {
    const { clone, registry } = detachedClone({ keepLocalBranch: false, setOriginHead: false, extraBranches: ['release'] });
    expect((await registry.register({ name: 'shop', source: clone }, ADMIN)).registration.defaultBranch).toBe('master');
  });

  it('refuses several branches none of which is main or master, naming them and how to choose', async () => {
    const { clone, registry } = detachedClone({ keepLocalBranch: false, setOriginHead: false, extraBranches: ['release', 'develop'] });
    git(clone, 'update-ref', '-d', 'refs/remotes/origin/master');
    const refused = registry.register({ name: 'shop', source: clone }, ADMIN);
    await expect(refused).rejects.toMatchObject({
      code: 'bad_request',
      field: 'source',
      message: expect.stringMatching(/has several branches and none of them is main or master \(develop, release\); its HEAD is detached at [0-9a-f]{12}/),
      hint: expect.stringContaining('git remote set-head origin <branch>'),
    });
  });

  it('refuses a source with no branch at all', async () => {
    const { clone, registry } = detachedClone({ keepLocalBranch: false, setOriginHead: false });
    git(clone, 'update-ref', '-d', 'refs/remotes/origin/master');
    await expect(registry.register({ name: 'shop', source: clone }, ADMIN)).rejects.toMatchObject({
      code: 'bad_request',
      field: 'source',
      message: expect.stringMatching(/has no branch: its HEAD is detached at [0-9a-f]{12}, and it has no local branch/),
      hint: expect.stringContaining('git branch main'),
    });
  });
});
