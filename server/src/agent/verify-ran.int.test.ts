import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIX, FIX_PATCH, pytestRecipe, SHOP_FILES, TICKET, UNCOLLECTABLE } from '../../../test/support/pytest-shop';
import { startSnapshotSandboxes, type SnapshotSandboxes } from '../../../test/support/snapshot-sandbox';
import { gradeInstance } from '../eval/grade';
import { SmartFeedbackEngine } from '../feedback/engine';
import type { SandboxProvider } from '../runner/ports';
import { runAgent } from './loop';
import { RecordingApprover } from './testing/context';
import { MemoryEventSink } from './testing/memory-sink';
import { ScriptedModel } from './testing/scripted-model';

/*
 * In gVisor, on the base image's pytest: a Python repository whose full suite stops at collection
 * (a test importing a module nobody installed, an import-time DeprecationWarning under
 * `filterwarnings = error`), so pytest runs no test, at the base as after the change. The task's
 * selected tests pass; the full suite before a PR ran nothing, which is no verification: the task
 * stops as test infrastructure and never reaches review. Graded with a listed test in a file that
 * could not be collected, the same repository and fix are an `error`, not `unresolved` (listed tests
 * in files that do collect are judged on the selection, as the task's first run was: grade.test).
 */

const RECIPE = pytestRecipe('fixture/shop-uncollectable');
const IMAGE = { name: 'shop-uncollectable', repo: { files: { ...SHOP_FILES, ...UNCOLLECTABLE }, message: 'shop' } };

let sandboxes: SnapshotSandboxes;

beforeAll(async () => {
  sandboxes = await startSnapshotSandboxes('verify-ran-int');
}, 600_000);

afterAll(async () => {
  await sandboxes?.close();
});

describe('a pytest suite that collects no test, in gVisor', { timeout: 300_000 }, () => {
  it('the task stops as test infrastructure after its selected tests pass, never reaching review', async () => {
    const sandbox = await sandboxes.create(IMAGE, { task: 'verify-ran', environment: RECIPE });
    const events = new MemoryEventSink();
    const model = new ScriptedModel([{ tools: [FIX] }, { tools: [{ name: 'finish', input: { summary: 'divide the percent by 100' } }] }, { text: 'not reached' }]);
    const outcome = await runAgent({ task: { ticket: TICKET }, sandbox, model, events, approver: new RecordingApprover(), feedback: new SmartFeedbackEngine({ repo: RECIPE.repo }) });

    expect(outcome).toMatchObject({ status: 'failed', reason: 'test_infrastructure' });
    expect(outcome.summary).toMatch(/^the test suite ran no test: `python3 -m pytest`; 2 test file\(s\) could not be collected or loaded: /);
    expect(outcome.summary).toContain('it ran none at the base commit either');
    const runs = events.ofType('tests.finished').map((event) => event.data);
    expect(runs.map((run) => [run.scope, run.ok, run.passed])).toEqual([['selected', true, 2], ['full', true, 0]]);
    expect(runs[1]?.preExisting).toEqual(expect.arrayContaining(['tests/test_report.py', 'tests/test_legacy.py']));
    expect(events.ofType('tests.runner_failed').map((event) => event.data.kind)).toEqual(['no_tests']);
  });

  it('grading the fix on it says error when a listed test is in a file pytest could not collect, naming the files', async () => {
    const provider: SandboxProvider = {
      acquire: async () => ({ sandbox: await sandboxes.create(IMAGE, { task: 'verify-ran-grade', environment: RECIPE }), source: 'snapshot', startMs: 0 }),
      release: async () => undefined,
    };
    const sha = (await sandboxes.create(IMAGE, { task: 'verify-ran-sha' })).baseSha;
    const instance = {
      repo: 'eval/shop', instance_id: 'shop-1', base_commit: sha, patch: FIX_PATCH, test_patch: '', problem_statement: TICKET.body,
      FAIL_TO_PASS: ['tests/test_price.py::test_discount'], PASS_TO_PASS: ['tests/test_price.py::test_no_discount', 'tests/test_legacy.py::test_legacy'],
    };
    const grade = await gradeInstance(provider, instance, { instance_id: 'shop-1', model_name_or_path: 'm', model_patch: FIX_PATCH }, { repo: 'shop', runs: 1 });
    expect(grade).toMatchObject({ status: 'error', resolved: false });
    expect(grade.message).toMatch(/^the tests could not be collected \(1 listed test\(s\) did not run: tests\/test_legacy.py::test_legacy\); 2 test file\(s\) could not be collected or loaded: /);
    expect(grade.message).toContain('tests/test_report.py');
  });
});
