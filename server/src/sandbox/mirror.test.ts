import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RepoMirror } from './mirror';

let root: string;
let source: string;
let sha: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'dockhand-mirror-test-'));
  source = join(root, 'source');
  mkdirSync(join(source, '.dockhand'), { recursive: true });
  writeFileSync(join(source, 'package.json'), '{"name":"x"}\n');
  writeFileSync(join(source, '.dockhand', 'setup.sh'), 'echo hi\n');
  // Binary content with newlines and NULs must come back byte for byte.
  writeFileSync(join(source, 'blob.bin'), Buffer.from([0, 10, 255, 10, 10, 0, 1]));
  writeFileSync(join(source, 'empty'), '');
  mkdirSync(join(source, '.github', 'workflows', 'nested'), { recursive: true });
  writeFileSync(join(source, '.github', 'workflows', 'release.yaml'), 'on: push\n');
  writeFileSync(join(source, '.github', 'workflows', 'weird name.yml'), 'on: push\n');
  writeFileSync(join(source, '.github', 'workflows', 'nested', 'deep.yml'), 'on: push\n');
  writeFileSync(join(source, '.github', 'dependabot.yml'), 'version: 2\n');
  const git = (...args: string[]) => execFileSync('git', args, { cwd: source, encoding: 'utf8' }).trim();
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'one');
  sha = git('rev-parse', 'HEAD');
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('RepoMirror.showMany', { timeout: 60_000 }, () => {
  it('reads several files of a commit in one git process: present, missing, binary, empty, a directory', async () => {
    const mirror = new RepoMirror(join(root, 'data'));
    const path = await mirror.ensure(source, sha);
    const files = await mirror.showMany(path, sha, ['package.json', 'missing.txt', 'blob.bin', '.dockhand', '.dockhand/setup.sh', 'empty', 'package.json']);
    expect(files.get('package.json')?.toString()).toBe('{"name":"x"}\n');
    expect(files.has('missing.txt')).toBe(true);
    expect(files.get('missing.txt')).toBeUndefined();
    expect([...(files.get('blob.bin') ?? [])]).toEqual([0, 10, 255, 10, 10, 0, 1]);
    expect(files.get('.dockhand')).toBeUndefined();
    expect(files.get('.dockhand/setup.sh')?.toString()).toBe('echo hi\n');
    expect(files.get('empty')?.length).toBe(0);
    // Same answers as one `git show` per file.
    for (const name of ['package.json', 'blob.bin', '.dockhand/setup.sh', 'missing.txt']) {
      expect(files.get(name)).toEqual(await mirror.show(path, sha, name));
    }
    expect(await mirror.showMany(path, sha, [])).toEqual(new Map());
  });
});

describe('RepoMirror.filesIn', { timeout: 60_000 }, () => {
  it('lists the files directly in a directory at a commit (not its subdirectories), none for a missing one', async () => {
    const mirror = new RepoMirror(join(root, 'data'));
    const path = await mirror.ensure(source, sha);
    expect(await mirror.filesIn(path, sha, '.github/workflows')).toEqual(['.github/workflows/release.yaml', '.github/workflows/weird name.yml']);
    expect(await mirror.filesIn(path, sha, '.github/workflows/')).toEqual(['.github/workflows/release.yaml', '.github/workflows/weird name.yml']);
    expect(await mirror.filesIn(path, sha, '.github')).toEqual(['.github/dependabot.yml']);
    expect(await mirror.filesIn(path, sha, 'no/such/dir')).toEqual([]);
  });
});

describe('RepoMirror updates', { timeout: 60_000 }, () => {
  it('serves concurrent callers of one mirror that lacks their commit: every ensure and branchHead succeeds, no fetch trips over another', async () => {
    const upstream = join(root, 'busy-source');
    const git = (...args: string[]) => execFileSync('git', args, { cwd: upstream, encoding: 'utf8' }).trim();
    mkdirSync(upstream);
    git('init', '-q', '-b', 'main');
    const commit = (name: string) => {
      writeFileSync(join(upstream, `${name}.txt`), `${name}\n`);
      git('add', '-A');
      git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', name);
      return git('rev-parse', 'HEAD');
    };
    const first = commit('first');
    const mirror = new RepoMirror(join(root, 'busy-data'));
    await mirror.ensure(upstream, first);
    // New commits on several branches: each fetch updates many refs (and takes their locks).
    for (let index = 0; index < 20; index++) git('branch', `topic-${index}`);
    const second = commit('second');
    const answers = await Promise.allSettled([
      ...Array.from({ length: 6 }, () => mirror.ensure(upstream, second)),
      mirror.branchHead(upstream, 'main'),
      mirror.branchHead(upstream, 'topic-3'),
      ...Array.from({ length: 4 }, () => mirror.ensure(upstream, second)),
    ]);
    const failures = answers.flatMap((answer) => (answer.status === 'rejected' ? [String(answer.reason)] : []));
    expect(failures).toEqual([]);
    expect(answers.map((answer) => (answer.status === 'fulfilled' ? answer.value : ''))).toEqual([
      ...Array.from({ length: 6 }, () => mirror.pathFor(upstream)),
      second,
      first,
      ...Array.from({ length: 4 }, () => mirror.pathFor(upstream)),
    ]);
  });
});

describe('RepoMirror fetches and bundles', { timeout: 60_000 }, () => {
  it("leaves the refs of bundles being made alone when a fetch prunes what the source lacks", async () => {
    const mirror = new RepoMirror(join(root, 'bundle-data'));
    const path = await mirror.ensure(source, sha);
    // What bundle() does first: a ref of its own under refs/dockhand/, until the bundle is written.
    execFileSync('git', ['update-ref', 'refs/dockhand/bundle-inflight', sha], { cwd: path });
    await mirror.branchHead(source, 'main'); // a fetch with --prune
    expect(execFileSync('git', ['for-each-ref', '--format=%(refname)', 'refs/dockhand/'], { cwd: path, encoding: 'utf8' }).trim()).toBe('refs/dockhand/bundle-inflight');
    const bundle = await mirror.bundle(path, sha);
    expect(bundle.subarray(0, 20).toString()).toMatch(/^# v2 git bundle/);
  });
});
