import type { EnvironmentRecipe } from '@dockhand/protocol';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRepoOfFiles } from '../../../test/support/fixture-repo';
import { HostSandbox } from '../sandbox/testing/host-sandbox';
import { InMemoryBaselineStore } from './baseline';
import { SmartFeedbackEngine } from './engine';
import { pytestUsageError } from './infrastructure';
import { withSideChannel } from './side-channel';
import { describeSteps } from './step-summary';

/*
 * The test command run as written, step by step, with per-test results read through the side
 * channel (side-channel.ts), on small repositories these tests write, with the host's node,
 * python3/pytest and the project's own vitest. gVisor: side-channel.int.test.ts.
 */

const NODE = process.versions.node;
const ROOT = resolve(import.meta.dirname, '../../..');

class RecipeSandbox extends HostSandbox {
  constructor(root: string, baseSha: string, readonly environment: EnvironmentRecipe, extraPath: string[] = []) {
    super(root, baseSha, extraPath);
  }
}

/** jest 30 in a cache of its own (.ci/needs/feedback.sh). */
const JEST = process.env.DOCKHAND_FEEDBACK_JEST ?? join(homedir(), '.cache/dockhand/feedback-jest');

/** Yarn berry and a PnP project with mocha installed by it (.ci/needs/feedback.sh). */
const PNP = process.env.DOCKHAND_FEEDBACK_PNP ?? join(homedir(), '.cache/dockhand/feedback-pnp');

function recipe(test: EnvironmentRecipe['test']): EnvironmentRecipe {
  return { repo: 'fixture/steps', install: { command: 'npm ci', source: 'default' }, lifecycleScripts: true, skipScripts: [], egressHosts: [], node: { version: NODE, source: 'test' }, test } as EnvironmentRecipe;
}

function sandboxOf(files: Record<string, string>, test: EnvironmentRecipe['test'], linkNodeModules = false) {
  const repo = createRepoOfFiles('steps', { '.gitignore': 'node_modules\n', ...files }, 'fixture');
  if (linkNodeModules) symlinkSync(join(ROOT, 'node_modules'), join(repo.path, 'node_modules'));
  return new RecipeSandbox(repo.path, repo.sha, recipe(test));
}

const NODE_TESTS = {
  'test/math.test.js': "const test = require('node:test');\nconst assert = require('node:assert');\ntest('adds', () => assert.equal(1 + 1, 2));\ntest('multiplies', () => assert.equal(2 * 3, 6));\n",
};

describe('the test command as written, step by step', { timeout: 120_000 }, () => {
  it('a linter that fails at the base is a pre-existing step; the tests after it still run and count', async () => {
    const sandbox = sandboxOf(
      { ...NODE_TESTS, 'lint.js': "console.error('src/a.js: 1 formatting problem'); process.exit(2);\n", 'package.json': JSON.stringify({ name: 'steps', scripts: { test: 'node lint.js && node --test test/' } }) },
      { command: 'npm test', source: 'package.json' },
    );
    const store = new InMemoryBaselineStore();
    const engine = new SmartFeedbackEngine({ repo: 'fixture/steps', baselineStore: store });
    const baseline = await engine.baseline(sandbox);
    // Before: the chain stopped at the linter, and the check said no test passes at the base.
    expect(baseline).toMatchObject({ passed: 2, failed: 1, preExistingFailures: ['node lint.js (exited with 2)'] });
    expect(baseline?.steps?.map((step) => [step.name, step.counted, step.exitCode])).toEqual([
      ['node lint.js', 'exit status', 2],
      ['npm test → node lint.js && node --test test/', 'tests', 0],
    ]);
    expect(describeSteps(baseline?.steps ?? [])).toContain('node lint.js: exited with 2 (counted by exit status; a failure at the base is pre-existing');
    const full = await engine.runTests(sandbox, { scope: 'full' });
    expect(full).toMatchObject({ ok: true, passed: 2, preExisting: ['node lint.js (exited with 2)'] });
    expect(full.command).toBe('npm test → node lint.js && node --test test/');
  });

  it('jest inside an `&&` chain runs as written and is counted per test; the step before it failing does not hide it', async () => {
    const repo = createRepoOfFiles('jest-chain', {
      '.gitignore': 'node_modules\n',
      // The repository's own flags; before, `--json --outputFile=…` was spliced in beside them.
      'package.json': JSON.stringify({ name: 'steps', scripts: { test: 'node typecheck.js && jest --ci --silent=false' } }),
      'typecheck.js': "console.error('src/a.ts(1,7): error TS2322'); process.exit(2);\n",
      'test/math.test.js': "describe('math', () => {\n  it('adds', () => expect(1 + 1).toBe(2));\n  it('breaks', () => expect(1).toBe(2));\n});\n",
    }, 'fixture');
    symlinkSync(join(JEST, 'node_modules'), join(repo.path, 'node_modules'));
    const sandbox = new RecipeSandbox(repo.path, repo.sha, recipe({ command: 'npm test', source: 'package.json' }));
    const full = await new SmartFeedbackEngine({ repo: 'fixture/jest' }).runTests(sandbox, { scope: 'full' });
    expect(full.command).toBe('npm test → node typecheck.js && jest --ci --silent=false');
    expect(full.cases.map((testCase) => [testCase.id, testCase.outcome])).toEqual([
      ['node typecheck.js (exited with 2)', 'failed'],
      ['test/math.test.js > math adds', 'passed'],
      ['test/math.test.js > math breaks', 'failed'],
    ]);
    expect(full.steps?.map((step) => [step.counted, step.passed, step.failed])).toEqual([['exit status', 0, 1], ['tests', 1, 1]]);
  });

  it('jest started by a runner that passes only some variables on (turbo 2\'s strict env mode keeps NODE_OPTIONS, not ours) is still counted', async () => {
    // census solidjs/solid: `turbo run test` ran vitest with the preload loaded but DOCKHAND_RESULTS_DIR gone, so
    // its report went elsewhere and the step was "counted by exit status".
    const strict = "const { spawnSync } = require('node:child_process');\nconst env = { PATH: process.env.PATH, HOME: process.env.HOME, NODE_OPTIONS: process.env.NODE_OPTIONS };\nconst run = spawnSync('jest', [], { stdio: 'inherit', env });\nprocess.exit(run.status ?? 1);\n";
    const repo = createRepoOfFiles('strict-env', {
      '.gitignore': 'node_modules\n',
      'package.json': JSON.stringify({ name: 'steps', scripts: { test: 'node scripts/turbo-like.cjs' } }),
      'scripts/turbo-like.cjs': strict,
      'test/math.test.js': "describe('math', () => {\n  it('adds', () => expect(1 + 1).toBe(2));\n  it('breaks', () => expect(1).toBe(2));\n});\n",
    }, 'fixture');
    symlinkSync(join(JEST, 'node_modules'), join(repo.path, 'node_modules'));
    const sandbox = new RecipeSandbox(repo.path, repo.sha, recipe({ command: 'npm test', source: 'package.json' }));
    const full = await new SmartFeedbackEngine({ repo: 'fixture/strict-env' }).runTests(sandbox, { scope: 'full' });
    expect(full.cases.map((testCase) => [testCase.id, testCase.outcome])).toEqual([
      ['test/math.test.js > math adds', 'passed'],
      ['test/math.test.js > math breaks', 'failed'],
    ]);
    expect(full.steps?.[0]).toMatchObject({ counted: 'tests', passed: 1, failed: 1 });
  });

  it('a step runs with the task runners\' caches off (turbo, nx), as on a CI machine that has none', () => {
    // census solidjs/solid: the baseline's second `turbo run test` replayed the first run's log, ran no vitest, and
    // the 978 tests that passed once counted as 0.
    const out = execFileSync('bash', ['-c', withSideChannel('echo "turbo=$TURBO_FORCE nx=$NX_SKIP_NX_CACHE"', {})], { encoding: 'utf8' });
    expect(out.split('\n')[0]).toBe('turbo=true nx=true');
  });

  it("stays out of the suite's own coverage: node --test --experimental-test-coverage reports no preload", () => {
    // census npm/hosted-git-info: `node --test --experimental-test-coverage --test-coverage-lines=100 …` counted the
    // preload's lines and failed its 100% thresholds at the base.
    const dir = mkdtempSync(join(tmpdir(), 'dockhand-coverage-'));
    writeFileSync(join(dir, 'lib.js'), 'module.exports = (a) => a + 1;\n');
    mkdirSync(join(dir, 'test'));
    writeFileSync(join(dir, 'test/lib.test.js'), "const test = require('node:test');\nconst assert = require('node:assert');\ntest('adds one', () => assert.equal(require('../lib')(1), 2));\n");
    const out = execFileSync('bash', ['-c', withSideChannel('node --test --experimental-test-coverage test/', { node: NODE })], { cwd: dir, encoding: 'utf8' });
    const [own = '', reports = ''] = out.split('@@DOCKHAND-SIDE-CHANNEL@@');
    expect(own).toContain('lib.js');
    expect(own).not.toContain('preload');
    expect(reports).toContain('ok 1 - adds one');
  });

  it('vitest started through a wrapper script is counted per test, the command untouched', async () => {
    const wrapper = "const { spawnSync } = require('node:child_process');\nconst run = spawnSync('vitest', ['run'], { stdio: 'inherit' });\nprocess.exit(run.status ?? 1);\n";
    const sandbox = sandboxOf(
      {
        'package.json': JSON.stringify({ name: 'steps', scripts: { test: 'node scripts/ts-scripts.cjs test' } }),
        'scripts/ts-scripts.cjs': wrapper,
        'vitest.config.mjs': 'export default { test: { include: ["test/**/*.test.mjs"] } };\n',
        'test/math.test.mjs': "import { describe, expect, it } from 'vitest';\ndescribe('math', () => {\n  it('adds', () => expect(1 + 1).toBe(2));\n  it('rounds', () => expect(Math.round(0.5)).toBe(0));\n});\n",
      },
      { command: 'npm test', source: 'package.json' },
      true,
    );
    const engine = new SmartFeedbackEngine({ repo: 'fixture/steps' });
    const full = await engine.runTests(sandbox, { scope: 'full' });
    // Before: an unknown runner, no report: "ran no test".
    expect(full.cases.map((testCase) => [testCase.id, testCase.outcome])).toEqual([
      ['test/math.test.mjs > math adds', 'passed'],
      ['test/math.test.mjs > math rounds', 'failed'],
    ]);
    expect(full.command).toBe('npm test → node scripts/ts-scripts.cjs test');
    expect(full.steps?.[0]).toMatchObject({ counted: 'tests', passed: 1, failed: 1, exitCode: 1 });
  });

  it('ava and tape started by a wrapper (run-s style) are counted per assertion from a copy of their own stdout', async () => {
    const runAll = "const { spawnSync } = require('node:child_process');\nfor (const command of process.argv.slice(2)) {\n  const run = spawnSync(command, { shell: true, stdio: 'inherit' });\n  if (run.status !== 0) process.exit(run.status ?? 1);\n}\n";
    const repo = createRepoOfFiles('wrapped', {
      '.gitignore': 'node_modules\n',
      'package.json': JSON.stringify({ name: 'steps', scripts: { test: "node scripts/run-all.cjs 'ava' 'tape test/tape/*.js | tap-spec'" }, ava: { files: ['test/ava/**/*.js'] } }),
      'scripts/run-all.cjs': runAll,
      'test/ava/math.js': "const test = require('ava');\ntest('adds', (t) => t.is(1 + 1, 2));\ntest('multiplies', (t) => t.is(2 * 3, 6));\n",
      'test/tape/words.js': "const test = require('tape');\ntest('words', (t) => {\n  t.equal('a'.toUpperCase(), 'A', 'upper');\n  t.equal('A'.toLowerCase(), 'a', 'lower');\n  t.end();\n});\n",
    }, 'fixture');
    // ava from the jest/ava cache, tape and tap-spec from the runners' cache, linked in as an install would put them.
    const runners = process.env.DOCKHAND_FEEDBACK_RUNNERS ?? join(homedir(), '.cache/dockhand/feedback-runners');
    mkdirSync(join(repo.path, 'node_modules/.bin'), { recursive: true });
    for (const [name, from] of [['ava', JEST], ['tape', runners], ['tap-spec', runners]] as const) {
      symlinkSync(join(from, 'node_modules', name), join(repo.path, 'node_modules', name));
      symlinkSync(join(from, 'node_modules/.bin', name), join(repo.path, 'node_modules/.bin', name));
    }
    const sandbox = new RecipeSandbox(repo.path, repo.sha, recipe({ command: 'npm test', source: 'package.json' }));
    const full = await new SmartFeedbackEngine({ repo: 'fixture/wrapped' }).runTests(sandbox, { scope: 'full' });
    // Before: a wrapper Dockhand does not know, no report: "ran no test".
    expect(full.infrastructure).toBeUndefined();
    expect(full.cases.map((testCase) => [testCase.id, testCase.outcome]).sort()).toEqual([
      ['adds', 'passed'],
      ['multiplies', 'passed'],
      ['words > lower', 'passed'],
      ['words > upper', 'passed'],
    ]);
  });

  it('ava named in the script itself runs as written (no --tap spliced in) and is counted per assertion through the side channel', async () => {
    const repo = createRepoOfFiles('direct-ava', {
      '.gitignore': 'node_modules\n',
      'package.json': JSON.stringify({ name: 'steps', scripts: { test: 'node -e 0 && ava' }, ava: { files: ['test/*.js'] } }),
      'test/math.js': "const test = require('ava');\ntest('adds', (t) => t.is(1 + 1, 2));\ntest('breaks', (t) => t.is(2 * 3, 7));\n",
    }, 'fixture');
    mkdirSync(join(repo.path, 'node_modules/.bin'), { recursive: true });
    symlinkSync(join(JEST, 'node_modules/ava'), join(repo.path, 'node_modules/ava'));
    symlinkSync(join(JEST, 'node_modules/.bin/ava'), join(repo.path, 'node_modules/.bin/ava'));
    const sandbox = new RecipeSandbox(repo.path, repo.sha, recipe({ command: 'npm test', source: 'package.json' }));
    const full = await new SmartFeedbackEngine({ repo: 'fixture/direct-ava' }).runTests(sandbox, { scope: 'full' });
    expect(full.infrastructure).toBeUndefined();
    expect(full.command).toBe('npm test → node -e 0 && ava');
    expect(full.cases.map((testCase) => [testCase.id, testCase.outcome]).sort()).toEqual([
      ['adds', 'passed'],
      ['breaks', 'failed'],
    ]);
  });

  it('pytest run through a shell script is counted per test through its plugin', async () => {
    const sandbox = sandboxOf(
      {
        'run-tests.sh': 'set -e\ncd tests && cd ..\npython3 -m pytest -q\n',
        'tests/test_calc.py': 'def test_adds():\n    assert 1 + 1 == 2\n\n\ndef test_breaks():\n    assert 1 == 2\n',
      },
      { command: 'bash run-tests.sh', source: '.dockhand/environment.yml' },
    );
    const full = await new SmartFeedbackEngine({ repo: 'fixture/steps' }).runTests(sandbox, { scope: 'full' });
    expect(full.cases.map((testCase) => [testCase.id, testCase.outcome])).toEqual([
      ['tests/test_calc.py::test_adds', 'passed'],
      ['tests/test_calc.py::test_breaks', 'failed'],
    ]);
    expect(full.infrastructure).toBeUndefined();
  });

  it("pytest refusing an addopts option names the option, the plugin and the file instead of 'ran no test'", async () => {
    const sandbox = sandboxOf(
      { 'pytest.ini': '[pytest]\naddopts = --reruns=2\n', 'tests/test_calc.py': 'def test_adds():\n    assert 1 + 1 == 2\n' },
      { command: 'python3 -m pytest', source: '.dockhand/environment.yml' },
    );
    const full = await new SmartFeedbackEngine({ repo: 'fixture/steps' }).runTests(sandbox, { scope: 'full' });
    expect(full.infrastructure?.kind).toBe('start');
    expect(full.infrastructure?.message).toContain('pytest refused `--reruns=2` (addopts of pytest.ini): the plugin pytest-rerunfailures that adds it is not installed in the sandbox');
    expect(full.infrastructure?.action).toContain('Install pytest-rerunfailures');
    // pytest 8/9's own words for `addopts = --cov -n auto` without pytest-cov and pytest-xdist.
    const refused = pytestUsageError('ERROR: usage: pytest [options] [file_or_dir] [file_or_dir] [...]\npytest: error: unrecognized arguments: --cov -n auto\n  inifile: /workspace/pyproject.toml\n  rootdir: /workspace\n');
    expect(refused?.detail).toBe('pytest refused `--cov` `-n` `auto` (addopts of pyproject.toml): the plugin pytest-cov, pytest-xdist that adds it is not installed in the sandbox; no test ran (exit 4)');
    expect(refused?.action).toContain('Install pytest-cov, pytest-xdist');
  });

  it('`cd packages/x && npm test` runs in that package as written, its tests counted with their repository paths', async () => {
    const sandbox = sandboxOf(
      {
        'package.json': JSON.stringify({ name: 'root', private: true, scripts: { test: 'cd packages/calc && npm test' } }),
        'packages/calc/package.json': JSON.stringify({ name: 'calc', scripts: { test: 'node --test test/' } }),
        ...Object.fromEntries(Object.entries(NODE_TESTS).map(([path, text]) => [`packages/calc/${path}`, text])),
      },
      { command: 'npm test', source: 'package.json' },
    );
    const full = await new SmartFeedbackEngine({ repo: 'fixture/steps' }).runTests(sandbox, { scope: 'full' });
    expect(full.command).toBe('npm test → cd packages/calc && npm test');
    expect(full).toMatchObject({ ok: true, passed: 2, failed: 0 });
    // Before: the chain's `cd` ran as a step of its own and `npm test` ran at the root (Missing script).
    expect(full.cases.map((testCase) => [testCase.id, testCase.outcome])).toEqual([['adds', 'passed'], ['multiplies', 'passed']]);
  });

  it("yarn berry's Plug'n'Play: a script's bare `mocha` runs through yarn, as berry runs it, and is counted per test", async () => {
    const project = join(PNP, 'project');
    const manifest = readFileSync(join(project, 'package.json'), 'utf8');
    const repo = createRepoOfFiles('pnp', {
      '.gitignore': '.yarn/\n.pnp.*\n',
      'package.json': manifest,
      '.yarnrc.yml': readFileSync(join(project, '.yarnrc.yml'), 'utf8'),
      'yarn.lock': readFileSync(join(project, 'yarn.lock'), 'utf8'),
      'lint.js': "console.log('lint ok');\n",
      'test/math.test.js': "const assert = require('assert');\ndescribe('math', () => {\n  it('adds', () => assert.equal(1 + 1, 2));\n  it('breaks', () => assert.equal(1, 2));\n});\n",
    }, 'pnp fixture');
    // The install's output, as a snapshot holds it: no node_modules, so no node_modules/.bin/mocha.
    for (const entry of readdirSync(project)) if (entry === '.yarn' || entry.startsWith('.pnp.')) cpSync(join(project, entry), join(repo.path, entry), { recursive: true });
    const bin = mkdtempSync(join(tmpdir(), 'dockhand-berry-'));
    writeFileSync(join(bin, 'yarn'), `#!/bin/sh\nexec node ${join(PNP, 'berry/node_modules/@yarnpkg/cli-dist/bin/yarn.js')} "$@"\n`, { mode: 0o755 });
    const environment = { ...recipe({ command: 'yarn test', source: 'package.json' }), packageManager: { name: 'yarn-berry', version: '4.18.1', source: 'package.json packageManager' } } as EnvironmentRecipe;
    const sandbox = new RecipeSandbox(repo.path, repo.sha, environment, [bin]);
    // The host's PATH without any node_modules/.bin (vitest's own puts this project's, which holds a mocha).
    const hostPath = process.env.PATH;
    process.env.PATH = (hostPath ?? '').split(':').filter((dir) => !dir.includes('node_modules')).join(':');
    const full = await new SmartFeedbackEngine({ repo: 'fixture/pnp' }).runTests(sandbox, { scope: 'full' }).finally(() => {
      process.env.PATH = hostPath;
    });
    // Before: `mocha: command not found`, the runner missing.
    expect(full.infrastructure).toBeUndefined();
    expect(full.command).toBe('yarn test → node lint.js && mocha test/');
    expect(full.cases.map((testCase) => [testCase.id, testCase.outcome])).toEqual([
      ['test/math.test.js > math adds', 'passed'],
      ['test/math.test.js > math breaks', 'failed'],
    ]);
  });

  it("a step's multi-line `run: |` block runs as one bash script, as GitHub runs it (jshttp/etag's if/then/else/fi), and its tests are counted", async () => {
    const block = 'if npm -ps ls nyc | grep -q nyc; then\n  npm run test-ci\nelse\n  npm test\nfi\n';
    const sandbox = sandboxOf(
      {
        'package.json': JSON.stringify({ name: 'etag-like', scripts: { test: 'node --test test/' } }),
        ...NODE_TESTS,
      },
      { command: block.trim(), source: '.github/workflows/ci.yml', steps: [{ name: 'Run tests', command: block }] },
    );
    const full = await new SmartFeedbackEngine({ repo: 'fixture/block' }).runTests(sandbox, { scope: 'full' });
    // Before: the lines joined with && (`… nyc && then npm run test-ci && else …`), bash's syntax error, exit 2.
    expect(full.infrastructure).toBeUndefined();
    expect(full.cases.map((testCase) => [testCase.id, testCase.outcome])).toEqual([
      ['adds', 'passed'],
      ['multiplies', 'passed'],
    ]);
    expect(full.steps?.map((step) => step.counted)).toEqual(['tests']);
  });

  it("the recipe's test.steps run separately, each in its cwd with its env; a failing first step does not stop the second", async () => {
    const sandbox = sandboxOf(
      {
        'check-env.js': "if (process.env.STRICT !== 'yes') { console.error('STRICT is not set'); process.exit(3); }\n",
        'packages/calc/package.json': JSON.stringify({ name: 'calc', scripts: { test: 'node --test test/' } }),
        ...Object.fromEntries(Object.entries(NODE_TESTS).map(([path, text]) => [`packages/calc/${path}`, text])),
      },
      {
        command: 'node check-env.js && npm test',
        source: '.github/workflows/ci.yml',
        steps: [
          { name: 'Check', command: 'node check-env.js' },
          { name: 'Test', command: 'npm test', cwd: 'packages/calc', env: { STRICT: 'yes' } },
        ],
      },
    );
    const full = await new SmartFeedbackEngine({ repo: 'fixture/steps' }).runTests(sandbox, { scope: 'full' });
    expect(full.cases.map((testCase) => [testCase.id, testCase.outcome])).toEqual([
      ['Check: node check-env.js (exited with 3)', 'failed'],
      ['packages/calc > adds', 'passed'],
      ['packages/calc > multiplies', 'passed'],
    ]);
    expect(full.steps?.map((step) => [step.name, step.counted])).toEqual([
      ['Check: node check-env.js', 'exit status'],
      ['Test: npm test → node --test test/', 'tests'],
    ]);
  });
});
