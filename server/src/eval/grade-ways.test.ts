import type { EnvironmentRecipe } from '@dockhand/protocol';
import { execFileSync } from 'node:child_process';
import { symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRepoOfFiles } from '../../../test/support/fixture-repo';
import type { SandboxProvider } from '../runner/ports';
import { HostSandbox } from '../sandbox/testing/host-sandbox';
import type { EvalInstance } from './formats';
import { gradeInstance } from './grade';

/*
 * Grading runs the listed tests the way the task's verified stop ran them, through the feedback
 * engine with a recipe (its steps, its side channel), on repositories these tests write, with the
 * host's node, python3/pytest and the project's own vitest.
 */

const ROOT = resolve(import.meta.dirname, '../../..');

class RecipeSandbox extends HostSandbox {
  constructor(root: string, baseSha: string, readonly environment: EnvironmentRecipe) {
    super(root, baseSha);
  }
}

function recipe(command: string): EnvironmentRecipe {
  return { repo: 'fixture/grade', install: { command: 'true', source: 'default' }, lifecycleScripts: true, skipScripts: [], egressHosts: [], node: { version: process.versions.node, source: 'test' }, test: { command, source: 'package.json' } };
}

/** A provider handing out one host sandbox of the repository at its commit, with the recipe. */
function providerOf(files: Record<string, string>, test: string, linkNodeModules: boolean): { provider: SandboxProvider; sha: string } {
  const repo = createRepoOfFiles('grade-ways', { '.gitignore': 'node_modules\n', ...files }, 'fixture');
  if (linkNodeModules) symlinkSync(join(ROOT, 'node_modules'), join(repo.path, 'node_modules'));
  // Each grade gets the repository back at its commit, as a fresh sandbox would be.
  const release = async () => {
    execFileSync('git', ['reset', '-q', '--hard', repo.sha], { cwd: repo.path });
    execFileSync('git', ['clean', '-q', '-fdx', '-e', 'node_modules'], { cwd: repo.path });
  };
  return { provider: { acquire: async () => ({ sandbox: new RecipeSandbox(repo.path, repo.sha, recipe(test)), source: 'snapshot', startMs: 0 }), release }, sha: repo.sha };
}

/** A whole-file diff of `text` with the line `before` replaced by `after` (context enough for `git apply`). */
function diff(path: string, text: string, before: string, after: string): string {
  const lines = text.split('\n').slice(0, -1);
  if (!lines.includes(before)) throw new Error(`${path} has no line ${before}`);
  const body = lines.flatMap((line) => (line === before ? [`-${before}`, `+${after}`] : [` ${line}`]));
  return `diff --git a/${path} b/${path}\n--- a/${path}\n+++ b/${path}\n@@ -1,${lines.length} +1,${lines.length} @@\n${body.join('\n')}\n`;
}
const newFile = (path: string, text: string) => {
  const lines = text.split('\n').slice(0, -1);
  return `diff --git a/${path} b/${path}\nnew file mode 100644\n--- /dev/null\n+++ b/${path}\n@@ -0,0 +1,${lines.length} @@\n${lines.map((line) => `+${line}`).join('\n')}\n`;
};

const AVERAGE = 'export function average(values) {\n  return values.reduce((a, b) => a + b, 0) / (values.length + 1);\n}\n';
const SUM_TEST = "import { expect, it } from 'vitest';\nit('sums', () => expect([1, 2].reduce((a, b) => a + b, 0)).toBe(3));\n";

describe('grading: the ways the verified stop runs the tests', { timeout: 180_000 }, () => {
  it('finds vitest tests through the selection when the whole command cannot be read per test (a script that sets its own NODE_OPTIONS)', async () => {
    // `NODE_OPTIONS=… vitest run` replaces the side channel's NODE_OPTIONS: the whole command is
    // counted by its exit status only; the selection runs vitest on its own line and counts each test.
    const { provider, sha } = providerOf(
      {
        'package.json': JSON.stringify({ name: 'calc', type: 'module', scripts: { test: 'NODE_OPTIONS=--no-warnings vitest run' } }),
        'src/average.js': AVERAGE,
        'test/sum.test.js': SUM_TEST,
      },
      'npm test',
      true,
    );
    const testFile = "import { expect, it } from 'vitest';\nimport { average } from '../src/average.js';\nit('averages', () => expect(average([2, 4])).toBe(3));\n";
    const instance: EvalInstance = {
      repo: 'fixture/calc', instance_id: 'calc-1', base_commit: sha, patch: '', test_patch: newFile('test/average.test.js', testFile),
      problem_statement: 'average() is wrong', FAIL_TO_PASS: ['test/average.test.js > averages'], PASS_TO_PASS: [],
    };
    const fix = diff('src/average.js', AVERAGE, '  return values.reduce((a, b) => a + b, 0) / (values.length + 1);', '  return values.reduce((a, b) => a + b, 0) / values.length;');
    const grade = await gradeInstance(provider, instance, { instance_id: 'calc-1', model_name_or_path: 'm', model_patch: fix }, { repo: 'calc', runs: 1 });
    expect(grade.status).toBe('resolved');
    expect(grade.tests).toMatchObject([{ id: 'test/average.test.js > averages', outcomes: ['passed'], way: 'selected' }]);
    expect(grade.command).toMatch(/^full: npm test → NODE_OPTIONS=--no-warnings vitest run; selected: /);

    // The same without the fix: found the same way, and failing.
    const unfixed = await gradeInstance(provider, instance, { instance_id: 'calc-1', model_name_or_path: 'm', model_patch: diff('test/sum.test.js', SUM_TEST, "it('sums', () => expect([1, 2].reduce((a, b) => a + b, 0)).toBe(3));", "it('sums', () => expect(3).toBe(3));") }, { repo: 'calc', runs: 1 });
    expect(unfixed.status).toBe('unresolved');
    expect(unfixed.tests).toMatchObject([{ id: 'test/average.test.js > averages', outcomes: ['failed'], way: 'selected' }]);
  });
});

describe("grading by SWE-bench's rules", { timeout: 180_000 }, () => {
  const files = {
    'pyproject.toml': '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n',
    'lib/__init__.py': '',
    'lib/calc.py': 'def double(x):\n    return x * 3\n',
    'tests/test_calc.py':
      'import pytest\nfrom lib.calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n\n\n@pytest.mark.xfail(reason="known bug")\ndef test_known_bug():\n    assert double(0) == 1\n\n\n@pytest.mark.skip(reason="slow")\ndef test_slow():\n    assert True\n\n\nclass TestOld:\n    def test_zero(self):\n        assert double(0) == 0\n',
  };
  const fix = diff('lib/calc.py', files['lib/calc.py'], '    return x * 3', '    return x * 2');
  const instance = (sha: string, lists: Pick<EvalInstance, 'FAIL_TO_PASS' | 'PASS_TO_PASS'>): EvalInstance => ({
    repo: 'fixture/calc', instance_id: 'calc-py', base_commit: sha, patch: fix, test_patch: '', problem_statement: 'double() triples', ...lists,
  });
  const prediction = { instance_id: 'calc-py', model_name_or_path: 'm', model_patch: fix };

  it('an xfail test in PASS_TO_PASS passes (XFAIL), so does a skipped one (SKIPPED is maintained); a unittest-style id names the pytest case', async () => {
    // pytest through a wrapper script: counted by the side channel's pytest plugin.
    const { provider, sha } = providerOf({ ...files, 'run-tests.sh': 'set -e\npython3 -m pytest -q\n' }, 'bash run-tests.sh', false);
    const grade = await gradeInstance(provider, instance(sha, {
      FAIL_TO_PASS: ['tests/test_calc.py::test_double'],
      PASS_TO_PASS: ['tests/test_calc.py::test_known_bug', 'tests/test_calc.py::test_slow', 'test_zero (tests.test_calc.TestOld)'],
    }), prediction, { repo: 'calc', runs: 1 });
    expect(grade.tests.map((test) => [test.id, test.outcomes])).toEqual([
      ['tests/test_calc.py::test_double', ['passed']],
      ['tests/test_calc.py::test_known_bug', ['passed']],
      ['tests/test_calc.py::test_slow', ['skipped']],
      ['test_zero (tests.test_calc.TestOld)', ['passed']],
    ]);
    expect(grade.tests_status.PASS_TO_PASS).toEqual({ success: ['tests/test_calc.py::test_known_bug', 'tests/test_calc.py::test_slow', 'test_zero (tests.test_calc.TestOld)'], failure: [] });
    expect(grade).toMatchObject({ status: 'resolved', resolved: true });
  });

  it('a skipped FAIL_TO_PASS test is a failure; listed tests that no run finds are an error naming what the runs did name', async () => {
    const { provider, sha } = providerOf({ ...files, 'run-tests.sh': 'set -e\npython3 -m pytest -q\n' }, 'bash run-tests.sh', false);
    const skipped = await gradeInstance(provider, instance(sha, { FAIL_TO_PASS: ['tests/test_calc.py::test_slow'], PASS_TO_PASS: [] }), prediction, { repo: 'calc', runs: 1 });
    expect(skipped.tests_status.FAIL_TO_PASS).toEqual({ success: [], failure: ['tests/test_calc.py::test_slow'] });
    expect(skipped.status).toBe('unresolved');

    const missing = await gradeInstance(provider, instance(sha, { FAIL_TO_PASS: ['tests/test_calc.py::test_triple'], PASS_TO_PASS: ['tests/test_other.py::test_x'] }), prediction, { repo: 'calc', runs: 1 });
    expect(missing.status).toBe('error');
    expect(missing.resolved).toBe(false);
    expect(missing.message).toMatch(/^none of the 2 listed test\(s\) was found in the runs \(full ran 3 test\(s\): `bash run-tests.sh`.*\); they named e\.g\. tests\/test_calc\.py::test_double/);
  });
});
