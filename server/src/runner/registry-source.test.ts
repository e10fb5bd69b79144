import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import { LocalForge } from '../forge/local-forge';
import { RepoMirror } from '../sandbox/mirror';
import { SqliteStore } from '../store/sqlite';
import { registeredSource, RepoRegistry } from './registry';

/* Issue #23 item 10: an admin could register the local forge's own bare repository as a new source. */

const ADMIN = { name: 'root', role: 'admin' as const, createdAt: '' };
const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' }).trim();

describe('registration refuses the local forge\u2019s own repositories as sources', { timeout: 60_000 }, () => {
  const closers: Array<() => void> = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });

  it('refuses <data>/forge/<name>.git (directly and through a symlink), naming why; a real source still registers', async () => {
    const root = temporaryDir('dockhand-registry-source-');
    const upstream = join(root, 'upstream');
    mkdirSync(upstream);
    git(upstream, 'init', '-q', '-b', 'main');
    writeFileSync(join(upstream, 'a.txt'), 'one\n');
    git(upstream, 'add', '-A');
    git(upstream, 'commit', '-q', '-m', 'one');
    const store = new SqliteStore(':memory:');
    closers.push(() => store.close());
    const mirror = new RepoMirror(join(root, 'data'), { sources: registeredSource(store) });
    const localForge = new LocalForge({ dataDir: join(root, 'data/forge'), store: store.pullRequests });
    const registry = new RepoRegistry({ store, mirror, localForge });

    await registry.register({ name: 'shop', source: upstream }, ADMIN);
    const copy = localForge.repositoryPath('shop');
    await expect(registry.register({ name: 'shop-again', source: copy }, ADMIN)).rejects.toMatchObject({
      code: 'bad_request',
      field: 'source',
      message: expect.stringContaining('is inside the local forge'),
    });
    symlinkSync(copy, join(root, 'innocent.git'));
    await expect(registry.register({ name: 'shop-linked', source: join(root, 'innocent.git') }, ADMIN)).rejects.toMatchObject({ field: 'source' });
    expect((await store.listRepos()).map((repo) => repo.name)).toEqual(['shop']);
  });
});
