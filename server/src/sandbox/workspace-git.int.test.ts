import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerSandboxDriver } from './docker-driver';
import type { DockerSandbox } from './docker-sandbox';
import { RepoMirror } from './mirror';
import { SnapshotManager, type Snapshot } from './snapshots';
import { createRepoFromFiles, ensureBaseImage, TEST_TOOLCHAIN_DIR } from './test-support';
import { ToolchainStore } from './toolchains';

/*
 * The workspace's git as a CI checkout has it, in real gVisor builds (#32): `origin` and
 * `origin/<default branch>` at the base commit, in the snapshot and wherever a task's workspace
 * is moved (census: `pnpm --filter "...[origin/master]" test` found no origin/master and its
 * readiness check ran past 15 minutes; remark-validate-links wants the origin remote).
 */
const docker = new Docker();
const ownerId = `test-workspace-git-${process.pid}`;
const repository = `dockhand/snapshot-workspace-git-test-${process.pid}`;
const CA = '/etc/ssl/certs/ca-certificates.crt';
const sources = new Map<string, string>();
let dataDir: string;
let mirror: RepoMirror;
let snapshots: SnapshotManager;
let driver: DockerSandboxDriver;
const cleanup: string[] = [];

beforeAll(() => {
  ensureBaseImage();
  dataDir = mkdtempSync(join(tmpdir(), 'dockhand-workspace-git-'));
  mirror = new RepoMirror(dataDir, { sources: (name) => sources.get(name) ?? name });
  const toolchains = new ToolchainStore({ dataDir: TEST_TOOLCHAIN_DIR, caBundle: CA });
  snapshots = new SnapshotManager({ docker, mirror, dataDir, ownerId, repository, egress: 'proxy', extraCaBundle: CA, toolchains, dependencyCache: false });
  driver = new DockerSandboxDriver({ docker, ownerId, runtime: 'runsc' });
});

afterAll(async () => {
  await driver?.destroyAll();
  for (const image of await docker.listImages({ filters: { reference: [repository] } })) {
    await docker.getImage(image.Id).remove({ force: true }).catch(() => undefined);
  }
  for (const path of [dataDir, ...cleanup]) rmSync(path, { recursive: true, force: true });
});

function register(name: string, files: Record<string, string>): ReturnType<typeof createRepoFromFiles> {
  const repo = createRepoFromFiles(files);
  sources.set(name, repo.path);
  cleanup.push(repo.path);
  return repo;
}

async function snapshotOf(name: string, sha: string): Promise<Snapshot> {
  const mirrorPath = await mirror.ensure(name, sha);
  return snapshots.resolve({ repo: name, mirrorPath, sha });
}

async function sandboxAt(snapshot: Snapshot, sha: string, name: string): Promise<DockerSandbox> {
  const mirrorPath = await mirror.ensure(name, sha);
  return driver.create({ image: snapshot.image, baseSha: sha, snapshot: snapshot.identity, bundle: () => mirror.bundle(mirrorPath, sha) });
}

async function sh(sandbox: DockerSandbox, script: string): Promise<{ exitCode: number; output: string }> {
  const result = await sandbox.exec({ cmd: ['bash', '-c', script], timeoutMs: 120_000 });
  return { exitCode: result.exitCode, output: (result.stdout + result.stderr).trim() };
}

describe("the workspace's origin", { timeout: 900_000 }, () => {
  it('origin/<default branch> is at the base commit, in the snapshot and after a move, so changed-package filters see the change', async () => {
    const files = {
      'package.json': JSON.stringify({ name: 'mono', private: true, scripts: { test: 'node -e 0' } }),
      'packages/a/index.js': 'module.exports = 1;\n',
      'packages/b/index.js': 'module.exports = 2;\n',
    };
    const repo = register('fixture/origin', files);
    // The census repository's default branch was master.
    execFileSync('git', ['branch', '-m', 'main', 'master'], { cwd: repo.path });
    const snapshot = await snapshotOf('fixture/origin', repo.sha);
    const first = await sandboxAt(snapshot, repo.sha, 'fixture/origin');
    expect((await sh(first, 'git rev-parse origin/master')).output).toBe(repo.sha);
    expect((await sh(first, 'git symbolic-ref refs/remotes/origin/HEAD')).output).toBe('refs/remotes/origin/master');
    expect((await sh(first, 'git remote get-url origin')).output).toBe('dockhand-local://fixture/origin');
    // What `pnpm --filter "...[origin/master]"` asks git: the task's change, package a only.
    await first.writeFile('packages/a/index.js', 'module.exports = 10;\n');
    expect(await sh(first, 'git diff --name-only origin/master')).toEqual({ exitCode: 0, output: 'packages/a/index.js' });
    // Never reachable: the sandbox has no network, and the URL names no host.
    expect((await sh(first, 'timeout 20 git fetch -q origin')).exitCode).not.toBe(0);
    expect(await first.diff()).toContain('packages/a/index.js');
    await first.destroy();

    // A task at a later base gets the snapshot moved there (the bundle path): origin/master follows.
    const later = repo.commit({ 'packages/b/index.js': 'module.exports = 3;\n' }, 'later');
    const moved = await sandboxAt(snapshot, later, 'fixture/origin');
    expect((await sh(moved, 'git rev-parse HEAD origin/master')).output.split('\n')).toEqual([later, later]);
    expect(await sh(moved, 'git diff --name-only origin/master')).toEqual({ exitCode: 0, output: '' });
    await moved.destroy();
  });
});

/** A package whose install runs `prepare` (npm ci runs the root's): `script` is prepare.js. */
function preparing(name: string, script: string): Record<string, string> {
  const packageJson = `${JSON.stringify({ name, version: '1.0.0', scripts: { prepare: 'node prepare.js', test: 'node --test' } }, null, 2)}\n`;
  const lock = JSON.stringify({ name, version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name, version: '1.0.0' } } });
  return { 'package.json': packageJson, 'package-lock.json': lock, '.gitignore': 'node_modules/\n', 'prepare.js': script, 'src/index.js': 'exports.answer = 42;\n' };
}

describe('a prepare that uses git in the workspace', { timeout: 900_000 }, () => {
  it('a repository the install made in a build directory (git init there) is the environment, and the snapshot builds', async () => {
    const script = [
      "const { execFileSync } = require('child_process');",
      "const fs = require('fs');",
      "fs.mkdirSync('build/site', { recursive: true });",
      "fs.writeFileSync('build/site/index.html', '<p>42</p>\\n');",
      "execFileSync('git', ['init', '-q'], { cwd: 'build/site' });",
      '',
    ].join('\n');
    const repo = register('fixture/prepare-git-init', preparing('prepare-git-init', script));
    // Before: `git add` refused the embedded repository without a commit ("does not have a commit checked out").
    const snapshot = await snapshotOf('fixture/prepare-git-init', repo.sha);
    const sandbox = await sandboxAt(snapshot, repo.sha, 'fixture/prepare-git-init');
    expect((await sh(sandbox, 'git rev-parse HEAD && cat build/site/index.html')).output).toBe(`${repo.sha}\n<p>42</p>`);
    expect(await sandbox.diff()).toBe('');
    await sandbox.writeFile('src/index.js', 'exports.answer = 43;\n');
    expect(await sandbox.diff()).toContain('+exports.answer = 43;');
    await sandbox.destroy();
  });

  it("an install after which git cannot read the workspace is named with git's own words, not as a HEAD moved to no commit", async () => {
    const script = "require('fs').writeFileSync('.git/HEAD', 'not a ref\\n');\n";
    const repo = register('fixture/prepare-breaks-git', preparing('prepare-breaks-git', script));
    const failure = await snapshotOf('fixture/prepare-breaks-git', repo.sha).then(
      () => undefined,
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    expect(failure).toMatch(/not a git repository/);
    expect(failure).not.toContain('no commit');
  });
});
