import type { EnvironmentRecipe } from '@dockhand/protocol';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readWorkspaceChanges } from '../feedback/snapshot';
import { buildScript, pnpmSettings } from './snapshot-build';
import { HostSandbox } from './testing/host-sandbox';

/*
 * The workspace a snapshot build leaves: its install step's script runs here on a host git
 * repository (the install itself a no-op), then a test run's output lands in it as node-tap
 * leaves it. The evidence in gVisor is `feedback/node-tap.int.test.ts`.
 */

const RECIPE: EnvironmentRecipe = {
  repo: 'fixture/tap-repo',
  install: { command: 'true', source: 'default' },
  lifecycleScripts: true,
  skipScripts: [],
  egressHosts: [],
  test: { command: 'npm test', source: 'package.json' },
};

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Fixture', '-c', 'user.email=fixture@dockhand.invalid', ...args], { cwd, encoding: 'utf8' }).trim();
}

function write(root: string, files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
}

/** A repository whose .gitignore lists node_modules only (as npm/ini's), after the build's script. */
function builtWorkspace(): { root: string; sha: string } {
  const root = mkdtempSync(join(tmpdir(), 'dockhand-snapshot-build-'));
  dirs.push(root);
  write(root, { '.gitignore': 'node_modules/\n', 'lib/words.js': 'exports.upper = (t) => t.toUpperCase();\n', 'test/words.js': "require('tap');\n" });
  git(root, 'init', '-q', '-b', 'main');
  git(root, 'add', '-A');
  git(root, 'commit', '-q', '-m', 'tap repo');
  execFileSync('bash', ['-c', buildScript({ repo: RECIPE.repo, recipeHash: '0'.repeat(16), environment: RECIPE, toolchains: [] })], { cwd: root, stdio: 'ignore' });
  return { root, sha: git(root, 'rev-parse', 'HEAD') };
}

describe('the workspace a snapshot build prepares', () => {
  it("leaves node-tap's run output out of the changed files and the diff, and keeps the agent's change", async () => {
    const { root, sha } = builtWorkspace();
    write(root, {
      // tap 16 (nyc) and tap 18, as they leave them after a run with coverage.
      '.nyc_output/3f2a.json': '{}',
      '.nyc_output/processinfo/3f2a.json': '{}',
      '.tap/processinfo/7c1d.json': '{}',
      '.tap/test-results/test/words.js.tap': 'TAP version 14\n',
      'packages/a/.nyc_output/1b.json': '{}',
      'lib/words.js': 'exports.upper = (t) => String(t).toUpperCase();\n',
    });
    const sandbox = new HostSandbox(root, sha);

    const changes = await readWorkspaceChanges(sandbox, sha);
    expect(changes.changed).toEqual(['lib/words.js']);
    const diff = await sandbox.diff();
    expect(diff).toContain('String(t)');
    expect(diff).not.toMatch(/\.nyc_output|\.tap\//);
  });

  it('keeps a change to a file the repository tracks under such a directory', async () => {
    const { root, sha } = builtWorkspace();
    write(root, { '.tap/fixture.json': '{"a":1}' });
    git(root, 'add', '-f', '.tap/fixture.json');
    git(root, 'commit', '-q', '-m', 'a tracked fixture');
    const base = git(root, 'rev-parse', 'HEAD');
    write(root, { '.tap/fixture.json': '{"a":2}' });

    expect((await readWorkspaceChanges(new HostSandbox(root, base), base)).changed).toEqual(['.tap/fixture.json']);
  });
});

/*
 * Census arcanis/typanion: the toolchain's yarn 4.18.1 hands over to the committed
 * .yarn/releases/yarn-4.0.0-rc.2.cjs, which knows caFilePath only and refused the build's
 * YARN_HTTPS_CA_FILE_PATH ("Unrecognized or legacy configuration settings found: httpsCaFilePath").
 */
describe("a yarn berry build's CA setting", () => {
  const berry: EnvironmentRecipe = { ...RECIPE, packageManager: { name: 'yarn-berry', version: '4.18.1', source: 'package.json packageManager' }, install: { command: 'env | grep ^YARN_ | sort > yarn-env.txt', source: 'test' } };

  function yarnEnvironment(files: Record<string, string>, env: Record<string, string>): string {
    const root = mkdtempSync(join(tmpdir(), 'dockhand-berry-ca-'));
    dirs.push(root);
    write(root, files);
    git(root, 'init', '-q', '-b', 'main');
    execFileSync('bash', ['-c', buildScript({ repo: 'fixture/berry', recipeHash: '0'.repeat(16), environment: berry, toolchains: [] })], { cwd: root, stdio: 'ignore', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } });
    return readFileSync(join(root, 'yarn-env.txt'), 'utf8').trim();
  }

  it('follows the committed yarnPath release: caFilePath for one that predates httpsCaFilePath, else as set', () => {
    const old = { '.yarnrc.yml': 'yarnPath: .yarn/releases/yarn-4.0.0-rc.2.cjs\n', '.yarn/releases/yarn-4.0.0-rc.2.cjs': 'settings: { caFilePath: {} }\n' };
    expect(yarnEnvironment(old, { YARN_HTTPS_CA_FILE_PATH: '/etc/dockhand/ca.pem', YARN_ENABLE_TELEMETRY: '0' })).toBe('YARN_CA_FILE_PATH=/etc/dockhand/ca.pem\nYARN_ENABLE_TELEMETRY=0');
    const current = { '.yarnrc.yml': "yarnPath: '.yarn/releases/yarn-4.5.0.cjs'\n", '.yarn/releases/yarn-4.5.0.cjs': 'settings: { httpsCaFilePath: {} }\n' };
    expect(yarnEnvironment(current, { YARN_CA_FILE_PATH: '/etc/dockhand/ca.pem' })).toBe('YARN_HTTPS_CA_FILE_PATH=/etc/dockhand/ca.pem');
    expect(yarnEnvironment({ '.yarnrc.yml': 'nodeLinker: node-modules\n' }, { YARN_HTTPS_CA_FILE_PATH: '/etc/dockhand/ca.pem' })).toBe('YARN_HTTPS_CA_FILE_PATH=/etc/dockhand/ca.pem');
  });
});

/*
 * Census tinylibs/tinybench: pnpm 11 reads pnpm_config_* only; with npm_config_store_dir ignored its
 * store sat beside node_modules and the hard links from it ran gVisor out of host file descriptors.
 */
describe("a pnpm build's settings", () => {
  it('gives each npm_config_ setting under pnpm 11\'s pnpm_config_ name too', () => {
    const settings = pnpmSettings({ HOME: '/home/dockhand', npm_config_store_dir: '/tmp/pnpm-store', npm_config_registry: 'http://10.0.0.1:4873/b/x/' });
    expect(settings).toEqual({ pnpm_config_store_dir: '/tmp/pnpm-store', pnpm_config_registry: 'http://10.0.0.1:4873/b/x/' });
  });
});
