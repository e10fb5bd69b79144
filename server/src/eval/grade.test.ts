import { describe, expect, it } from 'vitest';
import { createRepoOfFiles } from '../../../test/support/fixture-repo';
import { FIX_PATCH, SHOP_FILES, UNCOLLECTABLE } from '../../../test/support/pytest-shop';
import type { SandboxProvider } from '../runner/ports';
import { HostSandbox } from '../sandbox/testing/host-sandbox';
import type { EvalInstance } from './formats';
import { gradeInstance } from './grade';

const TEST_PATCH = 'diff --git a/test/calc.test.js b/test/calc.test.js\n--- a/test/calc.test.js\n+++ b/test/calc.test.js\n@@ -1,1 +1,2 @@\n test("add", () => {});\n+test("average", () => {});\n';
const instance: EvalInstance = {
  repo: 'eval/calc', instance_id: 'calc-1', base_commit: '0'.repeat(40), patch: '', test_patch: TEST_PATCH,
  problem_statement: 'average() is wrong', FAIL_TO_PASS: ['test/calc.test.js > average'], PASS_TO_PASS: ['add'],
};

/** A provider that must not be asked: these verdicts are reached before any sandbox. */
const acquired: string[] = [];
const noSandboxes: SandboxProvider = {
  async acquire(input) {
    acquired.push(input.taskId);
    throw new Error('no sandbox should be started for this prediction');
  },
  async release() {},
};

describe('gradeInstance before anything runs', () => {
  it('rejects a model patch that touches a file of test_patch, naming it', async () => {
    const cheat = 'diff --git a/src/calc.js b/src/calc.js\n--- a/src/calc.js\n+++ b/src/calc.js\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/test/calc.test.js b/test/calc.test.js\n--- a/test/calc.test.js\n+++ b/test/calc.test.js\n@@ -1 +1 @@\n-test("add", () => {});\n+test.skip("add", () => {});\n';
    const grade = await gradeInstance(noSandboxes, instance, { instance_id: 'calc-1', model_name_or_path: 'm', model_patch: cheat }, { repo: 'calc', runs: 1 });
    expect(grade.status).toBe('patch_touches_tests');
    expect(grade.resolved).toBe(false);
    expect(grade.message).toContain('test/calc.test.js');
    expect(grade.tests_status.FAIL_TO_PASS.failure).toEqual(['test/calc.test.js > average']);
    expect(acquired).toEqual([]);
  });

  it('does not run an empty patch or a missing prediction', async () => {
    expect((await gradeInstance(noSandboxes, instance, { instance_id: 'calc-1', model_name_or_path: 'm', model_patch: '' }, { repo: 'calc', runs: 1 })).status).toBe('empty_patch');
    expect((await gradeInstance(noSandboxes, instance, undefined, { repo: 'calc', runs: 1 })).status).toBe('missing_prediction');
    expect(acquired).toEqual([]);
  });

  it('goes on to a sandbox for a patch that leaves the tests alone', async () => {
    const fix = 'diff --git a/src/calc.js b/src/calc.js\n--- a/src/calc.js\n+++ b/src/calc.js\n@@ -1 +1 @@\n-a\n+b\n';
    await expect(gradeInstance(noSandboxes, instance, { instance_id: 'calc-1', model_name_or_path: 'm', model_patch: fix }, { repo: 'calc', runs: 1 })).rejects.toThrow(/no sandbox/);
    expect(acquired).toEqual(['grade-calc-1']);
  });
});

describe('gradeInstance: tests that could not be collected', { timeout: 120_000 }, () => {
  const shop: EvalInstance = {
    repo: 'eval/shop', instance_id: 'shop-1', base_commit: '', patch: FIX_PATCH, test_patch: '',
    problem_statement: 'discount() is ten times too large', FAIL_TO_PASS: ['tests/test_price.py::test_discount'], PASS_TO_PASS: ['tests/test_price.py::test_no_discount'],
  };
  /** A host-directory sandbox of the repository at its commit (pytest on the host). */
  const onHost = (files: Record<string, string>): { provider: SandboxProvider; instance: EvalInstance } => {
    const repo = createRepoOfFiles('grade-shop', files, 'shop');
    return {
      provider: { acquire: async () => ({ sandbox: new HostSandbox(repo.path, repo.sha), source: 'snapshot', startMs: 0 }), release: async () => undefined },
      instance: { ...shop, base_commit: repo.sha },
    };
  };

  it('is an error, not unresolved, naming the files pytest could not collect, when listed tests are in them', async () => {
    const { provider, instance } = onHost({ ...SHOP_FILES, ...UNCOLLECTABLE });
    const listed = { ...instance, PASS_TO_PASS: [...instance.PASS_TO_PASS, 'tests/test_legacy.py::test_legacy'] };
    const grade = await gradeInstance(provider, listed, { instance_id: 'shop-1', model_name_or_path: 'm', model_patch: FIX_PATCH }, { repo: 'shop', runs: 1 });
    expect(grade.status).toBe('error');
    expect(grade.resolved).toBe(false);
    expect(grade.message).toMatch(/^the tests could not be collected \(1 listed test\(s\) did not run: tests\/test_legacy.py::test_legacy\); 2 test file\(s\) could not be collected or loaded: /);
    expect(grade.message).toContain('tests/test_report.py');
    expect(grade.message).toContain('tests/test_legacy.py');
  });

  it('is judged on the selection when only files it does not list fail to collect, as the task\'s first run was, and says so', async () => {
    const { provider, instance } = onHost({ ...SHOP_FILES, ...UNCOLLECTABLE });
    const grade = await gradeInstance(provider, instance, { instance_id: 'shop-1', model_name_or_path: 'm', model_patch: FIX_PATCH }, { repo: 'shop', runs: 1 });
    expect(grade).toMatchObject({ status: 'resolved', resolved: true });
    expect(grade.tests.map((test) => [test.id, test.outcomes, test.way])).toEqual([
      ['tests/test_price.py::test_discount', ['passed'], 'selected'],
      ['tests/test_price.py::test_no_discount', ['passed'], 'selected'],
    ]);
    expect(grade.message).toMatch(/^the full run ran 0 test\(s\), 2 test file\(s\) could not be collected or loaded: .*; the listed tests were judged on the other runs$/);
  });

  it('is resolved when the same fix runs on a suite that collects', async () => {
    const { provider, instance } = onHost(SHOP_FILES);
    const grade = await gradeInstance(provider, instance, { instance_id: 'shop-1', model_name_or_path: 'm', model_patch: FIX_PATCH }, { repo: 'shop', runs: 1 });
    expect(grade).toMatchObject({ status: 'resolved', resolved: true });
    expect(grade.message).toBeUndefined();
  });
});
