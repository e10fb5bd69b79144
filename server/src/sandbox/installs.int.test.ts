import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readWorkspaceChanges } from '../feedback/snapshot';
import { DockerSandboxDriver } from './docker-driver';
import type { DockerSandbox } from './docker-sandbox';
import { RepoMirror } from './mirror';
import { SnapshotManager, type Snapshot, type SnapshotProgress } from './snapshots';
import { createRepoFromFiles, ensureBaseImage, TEST_TOOLCHAIN_DIR } from './test-support';
import { ToolchainStore } from './toolchains';

/*
 * Installs as they are, in real gVisor builds (issue 22, "Installs as they are"; issue 27 item 5):
 * an install that rewrites a tracked file and writes dist/ nobody ignores builds a snapshot whose
 * task sandboxes leave those files out of the diff; Python projects built by hatchling and flit
 * install with no package index, with their test dependencies kept outside the root; a CI's own
 * `pip install -e .[test]` runs; a requirement found nowhere is named with the index.
 */
const docker = new Docker();
const ownerId = `test-installs-${process.pid}`;
const repository = `dockhand/snapshot-installs-test-${process.pid}`;
const CA = '/etc/ssl/certs/ca-certificates.crt';
const sources = new Map<string, string>();
let dataDir: string;
let mirror: RepoMirror;
let snapshots: SnapshotManager;
let driver: DockerSandboxDriver;
const cleanup: string[] = [];

beforeAll(() => {
  ensureBaseImage();
  dataDir = mkdtempSync(join(tmpdir(), 'dockhand-installs-'));
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

async function snapshotOf(name: string, sha: string, onProgress?: (progress: SnapshotProgress) => void): Promise<Snapshot> {
  const mirrorPath = await mirror.ensure(name, sha);
  return snapshots.resolve({ repo: name, mirrorPath, sha, ...(onProgress ? { onProgress } : {}) });
}

async function sandboxAt(snapshot: Snapshot, sha: string, name: string): Promise<DockerSandbox> {
  const mirrorPath = await mirror.ensure(name, sha);
  return driver.create({ image: snapshot.image, baseSha: sha, snapshot: snapshot.identity, bundle: () => mirror.bundle(mirrorPath, sha) });
}

async function sh(sandbox: DockerSandbox, script: string): Promise<{ exitCode: number; output: string }> {
  const result = await sandbox.exec({ cmd: ['bash', '-c', script], timeoutMs: 120_000 });
  return { exitCode: result.exitCode, output: result.stdout + result.stderr };
}

/** tshy-like: the prepare script rewrites package.json's exports and writes dist/, which no .gitignore lists. */
const PREPARE = `const fs = require('fs');
const pkg = JSON.parse(fs.readFileSync('package.json', 'utf8'));
pkg.exports = { '.': './dist/index.js' };
fs.writeFileSync('package.json', JSON.stringify(pkg, null, 2) + '\\n');
fs.mkdirSync('dist', { recursive: true });
fs.writeFileSync('dist/index.js', fs.readFileSync('src/index.js', 'utf8'));
`;

describe('an install that writes or rewrites files', () => {
  it('builds the snapshot, names the files, and keeps them out of every diff until something else changes them', async () => {
    const packageJson = `${JSON.stringify({ name: 'rewrites', version: '1.0.0', scripts: { prepare: 'node prepare.js', test: 'node --test' } }, null, 2)}\n`;
    const lock = JSON.stringify({ name: 'rewrites', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'rewrites', version: '1.0.0' } } });
    const repo = register('acme/rewrites', { 'package.json': packageJson, 'package-lock.json': lock, '.gitignore': 'node_modules/\n', 'prepare.js': PREPARE, 'src/index.js': 'exports.answer = 42;\n' });
    const lines: string[] = [];
    const snapshot = await snapshotOf('acme/rewrites', repo.sha, (progress) => progress.line && lines.push(progress.line));
    expect(lines.some((line) => line.startsWith('the install changed dist/, package.json (2 files)'))).toBe(true);

    const sandbox = await sandboxAt(snapshot, repo.sha, 'acme/rewrites');
    expect((await sh(sandbox, 'cat dist/index.js && grep -c exports package.json')).output).toBe('exports.answer = 42;\n1\n');
    expect(await sandbox.diff()).toBe('');
    expect(await readWorkspaceChanges(sandbox, repo.sha)).toMatchObject({ changed: [], deleted: [] });

    // The agent's own change shows; a file the install rewrote, once edited, shows its whole change.
    await sandbox.writeFile('src/index.js', 'exports.answer = 43;\n');
    const rewritten = (await sandbox.readFile('package.json')).toString('utf8').replace('"version": "1.0.0"', '"version": "1.1.0"');
    await sandbox.writeFile('package.json', rewritten);
    const diff = await sandbox.diff();
    expect(diff).toContain('+exports.answer = 43;');
    expect(diff).toContain('+  "version": "1.1.0"');
    expect(diff).toContain('+  "exports": {');
    expect(diff).not.toContain('diff --git a/dist/index.js');
    expect((await readWorkspaceChanges(sandbox, repo.sha)).changed).toEqual(['package.json', 'src/index.js']);
    await sandbox.destroy();

    // A later commit with the same dependencies reuses the snapshot: moved there, the install's files stay and stay out of the diff.
    const next = repo.commit({ 'README.md': 'docs\n' }, 'docs');
    const later = await snapshotOf('acme/rewrites', next);
    expect(later.image).toBe(snapshot.image);
    const moved = await sandboxAt(later, next, 'acme/rewrites');
    expect((await sh(moved, 'git rev-parse HEAD && test -f dist/index.js && echo kept')).output).toBe(`${next}\nkept\n`);
    expect(await moved.diff()).toBe('');
    await moved.destroy();
  });
});

const TEST_FILE = 'from lib import answer\n\n\ndef test_answer():\n    assert answer() == 42\n';

describe('Python projects with the base image’s backends and no package index', () => {
  it('a hatchling project with tests/requirements.txt and a test extra installs, and its tests run with --cov', async () => {
    const pyproject = [
      '[build-system]',
      'requires = ["hatchling"]',
      'build-backend = "hatchling.build"',
      '',
      '[project]',
      'name = "lib"',
      'version = "0.1.0"',
      '',
      '[project.optional-dependencies]',
      'test = ["pytest-mock", "hypothesis"]',
      '',
      '[tool.pytest.ini_options]',
      'addopts = "--cov=lib -p xdist"',
      '',
    ].join('\n');
    const repo = register('acme/hatch', { 'pyproject.toml': pyproject, 'src/lib/__init__.py': 'def answer():\n    return 42\n', 'tests/test_lib.py': TEST_FILE, 'tests/requirements.txt': 'pytest-cov\npytest-xdist\n', '.gitignore': '.venv/\n' });
    const snapshot = await snapshotOf('acme/hatch', repo.sha);
    expect(snapshot.environment.install.command).toContain("-e '.[test]'");
    expect(snapshot.environment.install.command).toContain('-r tests/requirements.txt');
    const sandbox = await sandboxAt(snapshot, repo.sha, 'acme/hatch');
    // Editable: the source's change is what the tests import.
    await sandbox.writeFile('src/lib/__init__.py', 'def answer():\n    return 41 + 1\n');
    const run = await sh(sandbox, 'python3 -m pytest -q');
    expect(run.exitCode, run.output).toBe(0);
    expect(run.output).toMatch(/1 passed/);
    expect(run.output).toContain('coverage');
    await sandbox.destroy();
  });

  it('a flit project installs; a CI-style `pip install -e .[test]` as the install runs too', async () => {
    const pyproject = '[build-system]\nrequires = ["flit_core >=3.2,<4"]\nbuild-backend = "flit_core.buildapi"\n\n[project]\nname = "lib"\nversion = "0.1.0"\ndescription = "a lib"\n\n[project.optional-dependencies]\ntest = ["pytest-cov"]\n';
    const repo = register('acme/flit', {
      'pyproject.toml': pyproject,
      'lib.py': 'def answer():\n    return 42\n',
      'tests/test_lib.py': TEST_FILE,
      '.gitignore': '.venv/\n',
      '.dockhand/environment.yml': 'install: python3 -m venv --system-site-packages .venv && pip install -e .[test]\n',
    });
    const snapshot = await snapshotOf('acme/flit', repo.sha);
    const sandbox = await sandboxAt(snapshot, repo.sha, 'acme/flit');
    const run = await sh(sandbox, 'python3 -m pytest -q --cov=lib tests');
    expect(run.exitCode, run.output).toBe(0);
    expect(run.output).toMatch(/1 passed/);
    await sandbox.destroy();
  });

  it('a requirement the image lacks is named, with no package index configured', async () => {
    const repo = register('acme/missing', { 'requirements.txt': 'pytest-no-such-plugin-dockhand==1.0\n', 'tests/test_x.py': 'def test_x():\n    pass\n' });
    const failure = await snapshotOf('acme/missing', repo.sha).then(
      () => undefined,
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    expect(failure).toMatch(/the Python requirement "pytest-no-such-plugin-dockhand==1\.0" is not in the base image and pip looked for it in no index: no package index is configured\. To fix: set DOCKHAND_PIP_INDEX_URL/);
  });
});
