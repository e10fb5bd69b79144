import type { EnvironmentRecipe } from '@dockhand/protocol';
import { describe, expect, it } from 'vitest';
import { createRepoOfFiles } from '../../../test/support/fixture-repo';
import { FIX, pytestRecipe, SHOP_FILES, TICKET, UNCOLLECTABLE } from '../../../test/support/pytest-shop';
import { SmartFeedbackEngine } from '../feedback/engine';
import { HostSandbox } from '../sandbox/testing/host-sandbox';
import { runAgent } from './loop';
import { RecordingApprover } from './testing/context';
import { MemoryEventSink } from './testing/memory-sink';
import { ScriptedModel } from './testing/scripted-model';

/*
 * "Verified" needs tests that ran: a pytest repository on a host-directory sandbox with the real
 * feedback engine and the repository's test command. pytest stops at a collection error and runs
 * nothing, and its collection ERRORs are pre-existing when the base has them, so the full suite
 * was "0 tests passed … (2 pre-existing failure(s) still fail)" and the task reached review.
 * The same repository runs in gVisor in verify-ran.int.test.ts (with grading); test/support/pytest-shop.ts.
 */

class RecipeSandbox extends HostSandbox {
  constructor(root: string, baseSha: string, readonly environment: EnvironmentRecipe) {
    super(root, baseSha);
  }
}

function setup(files: Record<string, string>) {
  const repo = createRepoOfFiles('shop', { ...SHOP_FILES, ...files }, 'shop');
  const sandbox = new RecipeSandbox(repo.path, repo.sha, pytestRecipe('fixture/shop'));
  return { sandbox, events: new MemoryEventSink(), engine: new SmartFeedbackEngine({ repo: 'fixture/shop' }) };
}

describe('verified stop: a full suite that ran no test, or fewer than at the base', { timeout: 120_000 }, () => {
  it('a suite that stops at collection at the base and after the change stops the task as test infrastructure, never reaching review', async () => {
    const { sandbox, events, engine } = setup(UNCOLLECTABLE);
    const model = new ScriptedModel([{ tools: [FIX] }, { tools: [{ name: 'finish', input: { summary: 'divide the percent by 100' } }] }, { text: 'not reached' }]);
    const outcome = await runAgent({ task: { ticket: TICKET }, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });

    expect(outcome).toMatchObject({ status: 'failed', reason: 'test_infrastructure' });
    expect(outcome.summary).toMatch(/^the test suite ran no test: `python3 -m pytest`; 2 test file\(s\) could not be collected or loaded: /);
    expect(outcome.summary).toContain('tests/test_report.py');
    expect(outcome.summary).toContain('tests/test_legacy.py');
    expect(outcome.summary).toContain('it ran none at the base commit either');
    expect(outcome.summary).toContain('.dockhand/environment.yml');
    // The selection (shop/price.py → tests/test_price.py) was green; the full suite ran nothing.
    const runs = events.ofType('tests.finished').map((event) => event.data);
    expect(runs.map((run) => [run.scope, run.ok, run.passed])).toEqual([['selected', true, 2], ['full', true, 0]]);
    expect(events.ofType('tests.runner_failed').map((event) => event.data.kind)).toEqual(['no_tests']);
    const finish = events.ofType('tool.finished').find((event) => event.data.name === 'finish');
    expect(finish?.data).toMatchObject({ isError: true });
    expect(finish?.data.output).not.toContain('Verified');
  });

  it('a change that makes tests stop running is told so (fewer than at the base) and finishes once they run again', async () => {
    // tests/test_report.py skips itself without shop/report.py; the "fix" deletes it.
    const { sandbox, events, engine } = setup({
      'shop/report.py': 'def render():\n    return "ok"\n',
      'tests/test_report.py': 'import pytest\n\nreport = pytest.importorskip("shop.report")\n\n\ndef test_render():\n    assert report.render() == "ok"\n',
    });
    const finish = { name: 'finish', input: { summary: 'divide the percent by 100' } };
    const model = new ScriptedModel([
      { tools: [FIX, { name: 'run_command', input: { command: 'rm shop/report.py' } }] },
      { tools: [finish] },
      { tools: [{ name: 'run_command', input: { command: `git checkout ${sandbox.baseSha} -- shop/report.py` } }] },
      { tools: [finish] },
    ]);
    const outcome = await runAgent({ task: { ticket: TICKET }, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });

    const finishes = events.ofType('tool.finished').filter((event) => event.data.name === 'finish');
    expect(finishes.map((event) => event.data.isError)).toEqual([true, false]);
    expect(finishes[0]?.data.output).toMatch(/^Finish refused: the full suite ran 2 test\(s\), fewer than the 3 it ran at the base commit\. /);
    expect(outcome.status).toBe('finished_verified');
    expect(outcome.tests).toMatchObject({ ok: true, passed: 3, ran: 3 });
  });

  it('a ticket that allows test edits may remove a test file: fewer tests than at the base is then verified, not refused', async () => {
    const { sandbox, events, engine } = setup({
      'shop/report.py': 'def render():\n    return "ok"\n',
      'tests/test_report.py': 'from shop.report import render\n\n\ndef test_render():\n    assert render() == "ok"\n',
    });
    const model = new ScriptedModel([
      { tools: [FIX, { name: 'run_command', input: { command: 'rm shop/report.py tests/test_report.py' } }] },
      { tools: [{ name: 'finish', input: { summary: 'divide the percent by 100; drop the unused report and its test, as the ticket asks' } }] },
      { text: 'not reached' },
    ]);
    const outcome = await runAgent({ task: { ticket: TICKET, allowTestEdits: true }, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });

    const finishes = events.ofType('tool.finished').filter((event) => event.data.name === 'finish');
    expect(finishes.map((event) => event.data.isError)).toEqual([false]);
    expect(outcome.status).toBe('finished_verified');
    expect(outcome.tests).toMatchObject({ ok: true, passed: 2, ran: 2 });
  });
});
