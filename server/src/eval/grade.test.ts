import { describe, expect, it } from 'vitest';
import type { SandboxProvider } from '../runner/ports';
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
