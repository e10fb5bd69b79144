import type { EnvironmentRecipe } from '@dockhand/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSnapshotSandboxes, type SnapshotSandboxes } from '../../../test/support/snapshot-sandbox';
import { InMemoryBaselineStore } from './baseline';
import { runBaseline, SmartFeedbackEngine } from './engine';

/*
 * A Python project whose test command is `tox`, and tox's command `coverage run -m unittest
 * discover`, inside a real gVisor sandbox of `dockhand/base` (Debian 12: tox 3.28, coverage 6.5,
 * Python 3.11; no package index: the tox environment uses the system's packages). tox gives its
 * commands an environment of its own and coverage runs unittest in its own process: per-test
 * results reach Dockhand through PYTHONPATH passed on to tox (TOX_TESTENV_PASSENV) and the side
 * channel's sitecustomize. Before, the whole suite was one opaque failure at the base (`tox
 * (exited with 1)`) and a run after a fix counted "passed 0, failed 1, ok true".
 */

let sandboxes: SnapshotSandboxes;

beforeAll(async () => {
  sandboxes = await startSnapshotSandboxes('feedback-judgement-int');
});

afterAll(async () => {
  await sandboxes?.close();
});

const FILES: Record<string, string> = {
  '.gitignore': '.tox/\n.coverage\n__pycache__/\n',
  'tox.ini': '[tox]\nenvlist = py\nskipsdist = true\n\n[testenv]\nsitepackages = true\ndeps =\ncommands =\n    python -m coverage run -m unittest discover -s tests -t .\n    python -m coverage report\n',
  'calc/__init__.py': '',
  'calc/ops.py': 'def add(a, b):\n    return a + b\n\n\ndef mean(values):\n    return sum(values) / (len(values) + 1)\n',
  'tests/__init__.py': '',
  'tests/test_ops.py':
    'import unittest\n\nfrom calc.ops import add, mean\n\n\nclass TestOps(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n\n' +
    '    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n\n    def test_mean_one(self):\n        self.assertEqual(mean([4]), 4)\n',
};

function toxRecipe(): EnvironmentRecipe {
  return { repo: 'fixture/tox-coverage', install: { command: 'true', source: 'default' }, lifecycleScripts: true, skipScripts: [], egressHosts: [], test: { command: 'tox', source: '.dockhand/environment.yml' } };
}

describe('tox and coverage inside gVisor', { timeout: 900_000 }, () => {
  it('`tox` → `coverage run -m unittest discover` is counted per test at the base and after a fix', async () => {
    const recipe = toxRecipe();
    const sandbox = await sandboxes.create({ name: 'tox-coverage', repo: { files: FILES, message: 'tox project' } }, { task: 'judgement-tox', environment: recipe });
    const store = new InMemoryBaselineStore();
    const baseline = await runBaseline(sandbox, { baselineStore: store });
    expect(baseline.infrastructure).toBeUndefined();
    expect(baseline.reportedBy).toEqual(['unittest']);
    expect(baseline.steps?.map((step) => [step.name, step.counted, step.judgement])).toEqual([['tox', 'tests', 'tests']]);
    expect(baseline).toMatchObject({ passed: 1, failed: 2, ran: 3 });
    expect([...baseline.preExistingFailures].sort()).toEqual(['tests/test_ops.py::TestOps::test_mean', 'tests/test_ops.py::TestOps::test_mean_one']);

    const engine = new SmartFeedbackEngine({ repo: recipe.repo, baselineStore: store });
    await sandbox.writeFile('calc/ops.py', 'def add(a, b):\n    return a + b\n\n\ndef mean(values):\n    return sum(values) / len(values)\n');
    const selected = await engine.runTests(sandbox, { scope: 'selected' });
    expect(selected.infrastructure).toBeUndefined();
    expect(selected).toMatchObject({ ok: true, passed: 3, failed: 0, judged: true });
    expect(selected.cases.map((testCase) => [testCase.id, testCase.outcome]).sort()).toEqual([
      ['tests/test_ops.py::TestOps::test_add', 'passed'],
      ['tests/test_ops.py::TestOps::test_mean', 'passed'],
      ['tests/test_ops.py::TestOps::test_mean_one', 'passed'],
    ]);
    // The run left nothing in the workspace but the fix (.tox and .coverage are ignored; no report files).
    expect((await sandbox.diff()).split('\n').filter((line) => line.startsWith('+++ ')).map((line) => line.slice(6))).toEqual(['calc/ops.py']);
  });
});
