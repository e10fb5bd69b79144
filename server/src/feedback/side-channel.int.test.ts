import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npmTestRecipe, startSnapshotSandboxes, type SnapshotSandboxes } from '../../../test/support/snapshot-sandbox';
import { InMemoryBaselineStore } from './baseline';
import { runBaseline, SmartFeedbackEngine } from './engine';

/*
 * The test command run as written, step by step, inside real gVisor sandboxes of `dockhand/base`
 * (Node 18.20, python3 + pytest): a linter red at the base before `node --test` (counted through
 * node's reporter in NODE_OPTIONS), and pytest started by a shell script (counted through the
 * PYTEST_PLUGINS plugin). Host-directory versions and the other runners: side-channel.test.ts.
 */

let sandboxes: SnapshotSandboxes;

beforeAll(async () => {
  sandboxes = await startSnapshotSandboxes('feedback-side-channel-int');
});

afterAll(async () => {
  await sandboxes?.close();
});

const FILES: Record<string, string> = {
  '.gitignore': 'node_modules/\n',
  'package.json': JSON.stringify({ name: 'steps', private: true, scripts: { test: 'node lint.js && node --test test/ && bash run-python-tests.sh' } }, null, 2),
  'lint.js': "console.error('src/sum.js:1:1 Expected indentation of 2 spaces'); process.exit(1);\n",
  'src/sum.js': 'module.exports = function sum(a, b) {\n    return a + b;\n};\n',
  'test/sum.test.js': "const test = require('node:test');\nconst assert = require('node:assert');\nconst sum = require('../src/sum');\ntest('sums', () => assert.equal(sum(1, 2), 3));\ntest('sums negatives', () => assert.equal(sum(-1, -2), -3));\n",
  'run-python-tests.sh': 'set -e\npython3 -m pytest tests\n',
  'tests/test_words.py': 'def test_upper():\n    assert "a".upper() == "A"\n\n\ndef test_split():\n    assert "a b".split() == ["a", "b"]\n',
};

describe('steps as written inside gVisor', { timeout: 300_000 }, () => {
  it('a linter red at the base is pre-existing; node --test and a script-started pytest after it are counted per test', async () => {
    const recipe = { ...npmTestRecipe('fixture/steps'), node: { version: '18.20.4', source: 'test' } } as ReturnType<typeof npmTestRecipe>;
    const sandbox = await sandboxes.create({ name: 'side-channel-steps', repo: { files: FILES, message: 'steps' } }, { task: 'side-channel-steps', environment: recipe });
    const store = new InMemoryBaselineStore();
    const baseline = await runBaseline(sandbox, { baselineStore: store });
    expect(baseline.infrastructure).toBeUndefined();
    expect(baseline).toMatchObject({ passed: 4, failed: 1, preExistingFailures: ['node lint.js (exited with 1)'] });
    expect(baseline.steps?.map((step) => [step.name, step.counted, step.passed, step.failed])).toEqual([
      ['node lint.js', 'exit status', 0, 1],
      ['npm test → node lint.js && node --test test/ && bash run-python-tests.sh', 'tests', 2, 0],
      ['bash run-python-tests.sh', 'tests', 2, 0],
    ]);
    // The red step's last words come with it (the readiness check shows them beside "exited with 1").
    expect(baseline.steps?.[0]?.tail).toBe('src/sum.js:1:1 Expected indentation of 2 spaces');
    expect(baseline.steps?.[1]?.tail).toBeUndefined();

    const engine = new SmartFeedbackEngine({ repo: recipe.repo, baselineStore: store });
    await sandbox.writeFile('src/sum.js', 'module.exports = function sum(a, b) {\n    return a - b;\n};\n');
    const full = await engine.runTests(sandbox, { scope: 'full' });
    expect(full.ok).toBe(false);
    expect(full.preExisting).toEqual(['node lint.js (exited with 1)']);
    // node's TAP names the file of a failing test (its location), not of a passing one.
    expect(full.cases.filter((testCase) => testCase.outcome === 'failed').map((testCase) => testCase.id).sort()).toEqual(['node lint.js (exited with 1)', 'test/sum.test.js > sums', 'test/sum.test.js > sums negatives']);
    expect(full.cases.filter((testCase) => testCase.id.startsWith('tests/')).map((testCase) => [testCase.id, testCase.outcome])).toEqual([
      ['tests/test_words.py::test_upper', 'passed'],
      ['tests/test_words.py::test_split', 'passed'],
    ]);
    // The run left nothing in the workspace (no pytest cache, no report files).
    expect((await sandbox.diff()).split('\n').filter((line) => line.startsWith('+++ ')).map((line) => line.slice(6))).toEqual(['src/sum.js']);
  });
});
