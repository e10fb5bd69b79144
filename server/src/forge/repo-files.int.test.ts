import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_REPO_POLICY } from '../policy/repo-policy';
import { loadRepoPolicy, readFileAtCommit } from './repo-files';
import { createSourceRepo, git, writeFiles } from './testing/repo';

describe('loadRepoPolicy (real git)', () => {
  const repos: string[] = [];
  afterEach(() => {
    for (const repo of repos.splice(0)) rmSync(repo, { recursive: true, force: true });
  });

  it('reads .dockhand/policy.yml at the given commit, not from the working tree', async () => {
    const source = createSourceRepo();
    repos.push(source.path);
    expect(await loadRepoPolicy(source.path, source.sha)).toEqual(DEFAULT_REPO_POLICY);

    writeFiles(source.path, { '.dockhand/policy.yml': 'maxChangedLines: 50\nowners: [alice]\n' });
    git(source.path, 'add', '-A');
    git(source.path, 'commit', '-q', '-m', 'policy');
    const withPolicy = git(source.path, 'rev-parse', 'HEAD');
    // An uncommitted loosening in the working tree has no effect.
    writeFiles(source.path, { '.dockhand/policy.yml': 'maxChangedLines: 100000\n' });

    expect(await loadRepoPolicy(source.path, withPolicy)).toMatchObject({ maxChangedLines: 50, owners: ['alice'] });
    expect(await loadRepoPolicy(source.path, source.sha)).toEqual(DEFAULT_REPO_POLICY);
    expect(await readFileAtCommit(source.path, withPolicy, 'missing.txt')).toBeUndefined();
    expect(await readFileAtCommit(source.path, 'HEAD', 'README.md')).toBeUndefined();
  });

  it('names the bad field of an invalid policy', async () => {
    const source = createSourceRepo();
    repos.push(source.path);
    writeFiles(source.path, { '.dockhand/policy.yml': 'requiredApprovals: many\n' });
    git(source.path, 'add', '-A');
    git(source.path, 'commit', '-q', '-m', 'bad policy');
    await expect(loadRepoPolicy(source.path, git(source.path, 'rev-parse', 'HEAD'))).rejects.toMatchObject({
      code: 'bad_request',
      field: 'requiredApprovals',
    });
  });
});
