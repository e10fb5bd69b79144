import type { EnvironmentRecipe } from '@dockhand/protocol';
import { describe, expect, it } from 'vitest';
import { createFixtureRepo } from '../../../test/support/fixture-repo';
import { SmartFeedbackEngine } from '../feedback/engine';
import type { FeedbackEngine } from '../feedback/types';
import { HostSandbox } from '../sandbox/testing/host-sandbox';
import { runAgent } from './loop';
import { RecordingApprover } from './testing/context';
import { MemoryEventSink } from './testing/memory-sink';
import { ScriptedModel } from './testing/scripted-model';

/*
 * The loop's handling of test results with the real feedback engine and the repository's own
 * test command (`npm test` → `node --test`), on a host-directory sandbox: the baseline at the base
 * commit, pre-existing failures, the full suite once before the PR, and a runner that cannot run.
 * The same paths run inside gVisor in server/src/feedback/test-infrastructure.int.test.ts.
 */

const TICKET = { kind: 'text' as const, title: 'average() is wrong', body: 'average([1, 2, 3]) returns 1.67 instead of 2.' };
const FIX = { name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: 'let index = 1;', new_text: 'let index = 0;' } };
const LEGACY_TEST = "'use strict';\nconst test = require('node:test');\nconst assert = require('node:assert');\ntest('legacy rounding', () => {\n  assert.strictEqual(Math.round(2.5), 2);\n});\n";

/** A host sandbox with a recipe, as a snapshot's sandbox has. */
class RecipeSandbox extends HostSandbox {
  constructor(root: string, baseSha: string, readonly environment: EnvironmentRecipe) {
    super(root, baseSha);
  }
}

function recipe(test: string): EnvironmentRecipe {
  return { repo: 'fixture/buggy-calc', install: { command: 'npm ci', source: 'default' }, lifecycleScripts: true, skipScripts: [], egressHosts: [], test: { command: test, source: 'package.json' } };
}

function setup(files: Record<string, string> = {}, test = 'npm test') {
  const repo = createFixtureRepo('buggy-calc');
  if (Object.keys(files).length > 0) repo.commit(files, 'fixture change');
  const sandbox = new RecipeSandbox(repo.path, repo.sha, recipe(test));
  const events = new MemoryEventSink();
  const engine = new SmartFeedbackEngine({ repo: 'fixture/buggy-calc' });
  return { sandbox, events, engine };
}

describe('verified stop with the repository test command', { timeout: 120_000 }, () => {
  it('a failure that exists at the base is pre-existing: reported, not blocking a correct fix; the full suite runs once before the PR', async () => {
    const { sandbox, events, engine } = setup({ 'test/legacy.test.js': LEGACY_TEST });
    const model = new ScriptedModel([{ tools: [FIX] }, { tools: [{ name: 'finish', input: { summary: 'start the loop at 0' } }] }]);
    const outcome = await runAgent({ task: { ticket: TICKET }, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });

    expect(outcome.status).toBe('finished_verified');
    const baselineNote = events.ofType('user.message')[0]?.data.text ?? '';
    expect(baselineNote).toContain('Baseline: the server ran the repository\'s tests at the base commit twice');
    expect(baselineNote).toContain('test/legacy.test.js > legacy rounding');
    expect(baselineNote).toContain('test/calc.test.js > average of three numbers');

    const runs = events.ofType('tests.finished');
    expect(runs.map((run) => run.data.scope)).toEqual(['selected', 'full']);
    const full = runs[1]!.data;
    expect(full).toMatchObject({ ok: true, failed: 1, passed: 5, preExisting: ['test/legacy.test.js > legacy rounding'] });
    expect(full.command).toBe('npm test → node --test --test-reporter=tap');
    expect(events.events.map((event) => event.type).indexOf('review.finished')).toBeLessThan(events.events.indexOf(runs[1]!));
    expect(outcome.tests?.scope).toBe('full');
  });

  it("a ticket that names its failing test: a whitespace diff does not finish (the model is told the reproducing test still fails), the real fix does", async () => {
    const { sandbox, events, engine } = setup();
    const ticket = { kind: 'text' as const, title: 'average() is wrong', body: "average([1, 2, 3]) returns 1.67 instead of 2; test/calc.test.js 'average of three numbers' fails." };
    const whitespace = { name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: 'function add(a, b) {', new_text: 'function add(a, b)  {' } };
    const finish = { name: 'finish', input: { summary: 'fixed' } };
    const model = new ScriptedModel([{ tools: [whitespace] }, { tools: [finish] }, { tools: [FIX] }, { tools: [finish] }]);
    const outcome = await runAgent({ task: { ticket }, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });

    expect(events.ofType('user.message')[0]?.data.text).toContain('Reproducing tests: test/calc.test.js > average of three numbers (named in the ticket)');
    const finishes = events.ofType('tool.finished').filter((event) => event.data.name === 'finish');
    expect(finishes.map((event) => event.data.isError)).toEqual([true, false]);
    expect(finishes[0]?.data.output).toContain("The ticket's reproducing test test/calc.test.js > average of three numbers still fails");
    expect(outcome.status).toBe('finished_verified');
    const runs = events.ofType('tests.finished').map((event) => event.data);
    expect(runs[0]).toMatchObject({ ok: false, reproducing: [{ id: 'test/calc.test.js > average of three numbers', outcome: 'failed' }] });
    expect(runs.at(-1)).toMatchObject({ ok: true, scope: 'full', reproducing: [{ id: 'test/calc.test.js > average of three numbers', outcome: 'passed' }] });
    expect(runs.at(-1)?.preExisting ?? []).not.toContain('test/calc.test.js > average of three numbers');
  });

  it('a reproducing test given at submission blocks a no-op change; one that is not in the suite is a note, not a block', async () => {
    const { sandbox, events, engine } = setup();
    const comment = { name: 'edit_file', input: { path: 'src/calc.js', command: 'replace', old_text: "'use strict';", new_text: "'use strict';\n// averages" } };
    const model = new ScriptedModel([{ tools: [comment] }, { tools: [{ name: 'finish', input: { summary: 'done' } }] }, { text: 'no' }, { text: 'no' }, { text: 'no' }]);
    const task = { ticket: TICKET, reproducingTests: ['average of three numbers', 'test/missing.test.js'] };
    const outcome = await runAgent({ task, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });
    expect(outcome.status).toBe('failed');
    const note = events.ofType('user.message')[0]?.data.text ?? '';
    expect(note).toContain('Reproducing tests: average of three numbers (named for this task)');
    expect(note).toContain('Not in the suite at the base commit (checked if they appear, e.g. a test you add): test/missing.test.js');
    const finish = events.ofType('tool.finished').find((event) => event.data.name === 'finish');
    expect(finish?.data.output).toContain("The ticket's reproducing test average of three numbers still fails");
  });

  it('a red full suite before the PR refuses the finish with its new failures', async () => {
    // The selection (src/calc.js → test/calc.test.js) is green; a test elsewhere that the change breaks is not selected.
    const { sandbox, events, engine } = setup({
      'test/late.test.js': "'use strict';\nconst test = require('node:test');\nconst assert = require('node:assert');\nconst fs = require('node:fs');\ntest('calc.js keeps its first line', () => {\n  assert.ok(!fs.readFileSync(__dirname + '/../src/calc.js', 'utf8').includes('index = 0'));\n});\n",
    });
    const model = new ScriptedModel([
      { tools: [FIX] },
      { tools: [{ name: 'finish', input: { summary: 'start the loop at 0' } }] },
      { text: 'I give up.' },
      { text: 'Still nothing.' },
      { text: 'Done.' },
    ]);
    const outcome = await runAgent({ task: { ticket: TICKET }, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });
    expect(outcome.status).toBe('failed');
    const finish = events.ofType('tool.finished').find((event) => event.data.name === 'finish');
    expect(finish?.data.isError).toBe(true);
    expect(finish?.data.output).toContain('the full suite the server runs once before a pull request has new failures');
    expect(finish?.data.output).toContain('test/late.test.js > calc.js keeps its first line');
  });

  it('a runner that crashes at the base stops the task before any model turn (test_infrastructure)', async () => {
    const { sandbox, events, engine } = setup({ 'test/crash.js': "process.kill(process.pid, 'SIGKILL');\n", 'package.json': JSON.stringify({ name: 'buggy-calc', scripts: { test: 'node --require ./test/crash.js --test' } }) });
    const model = new ScriptedModel([{ tools: [FIX] }]);
    const outcome = await runAgent({ task: { ticket: TICKET }, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });
    expect(outcome).toMatchObject({ status: 'failed', reason: 'test_infrastructure' });
    expect(outcome.summary).toMatch(/^the test runner crashed: `npm test → node --require \.\/test\/crash\.js --test --test-reporter=tap`: killed by a signal \(exit 137: SIGKILL/);
    expect(outcome.summary).toContain('.dockhand/environment.yml');
    expect(model.requests).toHaveLength(0);
    expect(events.ofType('tests.runner_failed')[0]?.data).toMatchObject({ kind: 'crash' });
    expect(events.ofType('tests.finished')).toHaveLength(0);
  });

  it('a runner missing at finish is not a red test: run_tests says so, the finish stops the task', async () => {
    const { sandbox, events, engine } = setup({}, 'npm test');
    // No baseline (an engine without one): the runner disappears after the base was fine.
    const feedback: FeedbackEngine = { runTests: (box, opts) => engine.runTests(box, opts), diagnostics: (box) => engine.diagnostics(box) };
    const model = new ScriptedModel([
      { tools: [FIX, { name: 'run_command', input: { command: "sed -i 's/node --test/tape test\\/*.js/' package.json" } }] },
      { tools: [{ name: 'run_tests', input: { scope: 'full' } }] },
      { tools: [{ name: 'finish', input: { summary: 'start the loop at 0' } }] },
      { text: 'should not be reached' },
    ]);
    const outcome = await runAgent({ task: { ticket: TICKET }, sandbox, model, events, approver: new RecordingApprover(), feedback });
    const runTests = events.ofType('tool.finished').find((event) => event.data.name === 'run_tests');
    expect(runTests?.data.output).toMatch(/^the test runner could not start: `npm test → tape test\/\*\.js`: .*tape: (command )?not found — this is not caused by your change; do not try to fix it/);
    expect(outcome).toMatchObject({ status: 'failed', reason: 'test_infrastructure' });
    expect(model.requests.filter((request) => !request.tools.some((tool) => tool.name === 'submit_review'))).toHaveLength(3);
    expect(events.ofType('tests.runner_failed').map((event) => event.data.kind)).toEqual(['missing', 'missing']);
    expect(events.ofType('tests.finished')).toHaveLength(0);
  });
});
