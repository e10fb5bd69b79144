import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npmTestRecipe, startSnapshotSandboxes, type SnapshotSandboxes } from '../../../test/support/snapshot-sandbox';
import { runAgent } from '../agent/loop';
import { RecordingApprover } from '../agent/testing/context';
import { MemoryEventSink } from '../agent/testing/memory-sink';
import { ScriptedModel } from '../agent/testing/scripted-model';
import { buildPullRequestBody } from '../forge/pr-body';
import type { DockerSandbox } from '../sandbox/docker-sandbox';
import { InMemoryBaselineStore } from './baseline';
import { runBaseline, SmartFeedbackEngine } from './engine';

/*
 * The repository's own test command inside real gVisor sandboxes of `dockhand/base` (Node 18):
 * a tape repository whose `npm test` is `tape test/*.js | tap-spec` (tape and tap-spec from the
 * npm registry, see .ci/needs/feedback.sh), run by the feedback engine and by the agent loop
 * with a scripted model. Per-assertion counts, the selection passed to tape, a crashing runner
 * as an infrastructure result, and a pre-existing failure at the base that does not block a
 * correct fix, with the full suite run once before the PR.
 */

let sandboxes: SnapshotSandboxes;

const assertions = (name: string, count: number, from = 0) =>
  Array.from({ length: count }, (_, index) => `  t.equal(${name}(${from + index}), ${from + index} * 2, '${name} doubles ${from + index}');`).join('\n');

const FILES: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'tape-repo', private: true, scripts: { test: 'tape test/*.js | tap-spec' } }, null, 2),
  '.gitignore': 'node_modules/\n',
  'src/double.js': "'use strict';\nmodule.exports = function double(value) {\n  return value + value + (value === 3 ? 1 : 0);\n};\n",
  'src/triple.js': "'use strict';\nmodule.exports = function triple(value) {\n  return value * 3;\n};\n",
  'test/double.test.js': `'use strict';\nconst test = require('tape');\nconst double = require('../src/double');\ntest('double small numbers', (t) => {\n${assertions('double', 5)}\n  t.end();\n});\ntest('double large numbers', (t) => {\n${assertions('double', 4, 100)}\n  t.end();\n});\n`,
  'test/triple.test.js': `'use strict';\nconst test = require('tape');\nconst triple = require('../src/triple');\ntest('triple', (t) => {\n${Array.from({ length: 6 }, (_, index) => `  t.equal(triple(${index}), ${index * 3});`).join('\n')}\n  t.end();\n});\n`,
  'test/legacy.test.js': "'use strict';\nconst test = require('tape');\ntest('legacy', (t) => {\n  t.ok(true, 'still here');\n  t.equal(0.1 + 0.2, 0.3, 'float sum is exact');\n  t.end();\n});\n",
};

const RECIPE = npmTestRecipe('fixture/tape-repo');

/** A sandbox of a tape repository (FILES and `overrides`) with its node_modules, committed, as an image the way a snapshot holds it. */
function sandboxFor(name: string, overrides: Record<string, string> = {}): Promise<DockerSandbox> {
  return sandboxes.create({ name: `tape-${name}`, repo: { files: { ...FILES, ...overrides }, message: 'tape repo' }, nodeModules: 'runners' }, { task: `feedback-cmd-${name}`, environment: RECIPE });
}

beforeAll(async () => {
  sandboxes = await startSnapshotSandboxes('feedback-cmd-int');
});

afterAll(async () => {
  await sandboxes?.close();
});

const TICKET = { kind: 'text' as const, title: 'double(3) is 7', body: 'double() adds one for 3.' };
const FIX = { name: 'edit_file', input: { path: 'src/double.js', command: 'replace', old_text: ' + (value === 3 ? 1 : 0)', new_text: '' } };

describe('the repository test command inside gVisor', { timeout: 300_000 }, () => {
  it("runs a tape repo's `npm test`: one test per assertion, the selection passed to tape, the baseline at base", async () => {
    const sandbox = await sandboxFor('counts');
    const store = new InMemoryBaselineStore();
    const baseline = await runBaseline(sandbox, { baselineStore: store });
    expect(baseline).toMatchObject({ runner: 'tape', passed: 15, failed: 2, flaky: [] });
    expect(baseline.command).toBe('npm test → tape test/*.js; report read without the formatter `tap-spec`');
    expect(baseline.preExistingFailures).toEqual(['double small numbers > double doubles 3', 'legacy > float sum is exact']);

    const engine = new SmartFeedbackEngine({ repo: RECIPE.repo, baselineStore: store });
    const full = await engine.runTests(sandbox, { scope: 'full' });
    expect(full).toMatchObject({ passed: 15, failed: 2, ok: true, runner: 'tape', wholeCommand: true });

    await sandbox.writeFile('src/double.js', "'use strict';\nmodule.exports = function double(value) {\n  return value * 2;\n};\n");
    const selected = await engine.runTests(sandbox, { scope: 'selected' });
    expect(selected.command).toBe('tape test/double.test.js');
    expect(selected.selectionReason).toContain('passed to tape of `npm test` from package.json');
    expect(selected).toMatchObject({ passed: 9, failed: 0, ok: true, wholeCommand: false });
  });

  it("a repository's testCommand is what runs (the baseline and the selection), not its package.json test script", async () => {
    const sandbox = await sandboxFor('test-command', { 'package.json': JSON.stringify({ name: 'tape-repo', private: true, scripts: { test: 'node --test' } }, null, 2) });
    // What the recipe holds for `testCommand: tape test/double.test.js test/triple.test.js` in .dockhand/policy.yml
    // (server/src/sandbox/environments.int.test.ts proves policy.yml's testCommand reaches sandbox.environment).
    sandbox.environment = { ...RECIPE, test: { command: 'tape test/double.test.js test/triple.test.js', source: '.dockhand/policy.yml testCommand' } };
    const baseline = await runBaseline(sandbox);
    expect(baseline).toMatchObject({ runner: 'tape', passed: 14, failed: 1, preExistingFailures: ['double small numbers > double doubles 3'] });
    expect(baseline.command).toContain('tape test/double.test.js test/triple.test.js');
    expect(baseline.command).not.toContain('node --test');

    const engine = new SmartFeedbackEngine({ repo: 'fixture/tape-test-command' });
    await sandbox.writeFile('src/triple.js', "'use strict';\nmodule.exports = function triple(value) {\n  return value + value + value;\n};\n");
    const selected = await engine.runTests(sandbox, { scope: 'selected' });
    expect(selected.command).toBe('tape test/triple.test.js');
    expect(selected.selectionReason).toContain('passed to tape of `tape test/double.test.js test/triple.test.js` from .dockhand/policy.yml testCommand');
    expect(selected).toMatchObject({ passed: 6, failed: 0, ok: true });
  });

  it('an npm workspaces repo: each package runs its own tape script in its directory, tests counted per assertion, a selection goes to its package', async () => {
    const member = (name: string, fn: string) => ({
      [`packages/${name}/package.json`]: JSON.stringify({ name, private: true, scripts: { test: 'tape test/*.js' } }),
      [`packages/${name}/src/${fn}.js`]: fn === 'double' ? FILES['src/double.js'] ?? '' : FILES['src/triple.js'] ?? '',
      [`packages/${name}/test/${fn}.test.js`]: (fn === 'double' ? FILES['test/double.test.js'] : FILES['test/triple.test.js'])?.replace(`'../src/${fn}'`, `'../src/${fn}'`) ?? '',
    });
    const sandbox = await sandboxFor('workspaces', {
      'package.json': JSON.stringify({ name: 'mono', private: true, workspaces: ['packages/*'], scripts: { test: 'npm test --workspaces' } }, null, 2),
      ...member('doubler', 'double'),
      ...member('tripler', 'triple'),
      'packages/docs/package.json': JSON.stringify({ name: 'docs', private: true, scripts: { build: 'true' } }),
    });
    const store = new InMemoryBaselineStore();
    const baseline = await runBaseline(sandbox, { baselineStore: store });
    // 9 double assertions (one fails) and 6 triple ones; the root's own test/ is not run by the workspace command.
    expect(baseline).toMatchObject({ runner: 'tape', passed: 14, failed: 1, flaky: [] });
    // tape's ids name no file: in a workspace they carry the member, so two members' same-named tests differ.
    expect(baseline.preExistingFailures).toEqual(['packages/doubler > double small numbers > double doubles 3']);
    expect(baseline.testIds).toContain('packages/tripler > triple > should be strictly equal');
    expect(baseline.command).toContain('packages/doubler: npm run test → tape test/*.js');
    expect(baseline.command).toContain('packages/tripler: npm run test → tape test/*.js');
    // tape names a file only where an assertion fails: the path it prints is the package's, mapped back to the repository's.
    expect(baseline.failureFiles).toEqual({ 'packages/doubler > double small numbers > double doubles 3': 'packages/doubler/test/double.test.js' });

    const engine = new SmartFeedbackEngine({ repo: 'fixture/tape-workspaces', baselineStore: store });
    await sandbox.writeFile('packages/tripler/src/triple.js', "'use strict';\nmodule.exports = function triple(value) {\n  return value + value + value;\n};\n");
    const selected = await engine.runTests(sandbox, { scope: 'selected' });
    expect(selected.command).toBe('packages/tripler: tape test/triple.test.js');
    expect(selected.selectionReason).toContain('passed to the runners of packages/tripler');
    expect(selected).toMatchObject({ passed: 6, failed: 0, ok: true, wholeCommand: false });
  });

  it('a crashing runner is an infrastructure result: its event, no red test, the task fails with test_infrastructure', async () => {
    const sandbox = await sandboxFor('crash', {
      'package.json': JSON.stringify({ name: 'tape-repo', scripts: { test: 'tape -r ./test/setup.js test/*.js | tap-spec' } }),
      'test/setup.js': "process.kill(process.pid, 'SIGSEGV');\n",
    });
    const engine = new SmartFeedbackEngine({ repo: 'fixture/tape-crash' });
    const report = await engine.runTests(sandbox, { scope: 'full' });
    expect(report).toMatchObject({ ok: false, failed: 0, passed: 0, cases: [] });
    expect(report.infrastructure).toMatchObject({ kind: 'crash', message: expect.stringContaining('the test runner crashed: `npm test → tape -r ./test/setup.js test/*.js') });

    const events = new MemoryEventSink();
    const model = new ScriptedModel([{ tools: [FIX] }]);
    const outcome = await runAgent({ task: { ticket: TICKET }, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });
    expect(outcome).toMatchObject({ status: 'failed', reason: 'test_infrastructure' });
    expect(outcome.summary).toContain('.dockhand/environment.yml');
    expect(model.requests).toHaveLength(0);
    expect(events.ofType('tests.runner_failed').map((event) => event.data.kind)).toEqual(['crash']);
    expect(events.ofType('tests.finished')).toHaveLength(0);
  });

  it('a failure at the base is pre-existing: the correct fix finishes, the full suite runs once before the PR, the PR lists it', async () => {
    const sandbox = await sandboxFor('counts');
    const events = new MemoryEventSink();
    const engine = new SmartFeedbackEngine({ repo: 'fixture/tape-pre-existing' });
    const model = new ScriptedModel([
      { tools: [{ name: 'run_tests', input: { scope: 'full' } }] },
      { tools: [FIX] },
      { tools: [{ name: 'finish', input: { summary: 'double() no longer adds one for 3' } }] },
    ]);
    const outcome = await runAgent({ task: { ticket: TICKET }, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });
    expect(outcome.status).toBe('finished_verified');

    expect(events.ofType('user.message')[0]?.data.text).toContain('Pre-existing failures');
    const firstRun = events.ofType('tool.finished').find((event) => event.data.name === 'run_tests');
    expect(firstRun?.data.output).toMatch(/^Tests FAILED: 15 passed, 2 failed/);
    expect(firstRun?.data.output).toContain('All of the failing tests already fail at the base commit');

    const runs = events.ofType('tests.finished').map((event) => event.data);
    expect(runs.map((run) => run.scope)).toEqual(['full', 'selected', 'full']);
    expect(runs[2]).toMatchObject({ ok: true, passed: 16, failed: 1, preExisting: ['legacy > float sum is exact'] });
    const body = buildPullRequestBody({
      ticket: { title: TICKET.title },
      summary: outcome.summary,
      tests: { command: runs[2]!.command, passed: runs[2]!.passed, failed: runs[2]!.failed, log: runs[2]!.output, scope: runs[2]!.scope, preExisting: runs[2]!.preExisting ?? [] },
      usage: { turns: 3, inputTokens: 1, outputTokens: 1, costUsd: 0 },
    });
    expect(body).toContain('(full suite): 16 passed, 1 failed (1 of them pre-existing)');
    expect(body).toContain('- `legacy > float sum is exact`');
  });

  it("the ticket's reproducing test fails at the base: a whitespace diff does not finish, the real fix does, the PR lists it", async () => {
    const sandbox = await sandboxFor('counts');
    const events = new MemoryEventSink();
    const engine = new SmartFeedbackEngine({ repo: 'fixture/tape-reproducing' });
    const ticket = { kind: 'text' as const, title: 'double(3) is 7', body: 'test/double.test.js fails at double(3); double() adds one for 3.' };
    const whitespace = { name: 'edit_file', input: { path: 'src/double.js', command: 'replace', old_text: 'return value + value', new_text: 'return  value + value' } };
    const finish = { name: 'finish', input: { summary: 'double() no longer adds one for 3' } };
    const model = new ScriptedModel([{ tools: [whitespace] }, { tools: [finish] }, { tools: [FIX] }, { tools: [finish] }]);
    const outcome = await runAgent({ task: { ticket }, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });

    const reproducing = 'double small numbers > double doubles 3';
    expect(events.ofType('user.message')[0]?.data.text).toContain(`Reproducing tests: ${reproducing} (named in the ticket)`);
    const finishes = events.ofType('tool.finished').filter((event) => event.data.name === 'finish');
    expect(finishes.map((event) => event.data.isError)).toEqual([true, false]);
    expect(finishes[0]?.data.output).toContain(`The ticket's reproducing test ${reproducing} still fails`);
    expect(outcome.status).toBe('finished_verified');
    const runs = events.ofType('tests.finished').map((event) => event.data);
    expect(runs[0]).toMatchObject({ ok: false, reproducing: [{ id: reproducing, outcome: 'failed' }] });
    const last = runs.at(-1)!;
    expect(last).toMatchObject({ ok: true, scope: 'full', preExisting: ['legacy > float sum is exact'], reproducing: [{ id: reproducing, outcome: 'passed' }] });
    const body = buildPullRequestBody({
      ticket: { title: ticket.title },
      summary: outcome.summary,
      tests: { command: last.command, passed: last.passed, failed: last.failed, log: last.output, scope: last.scope, ...(last.reproducing ? { reproducing: last.reproducing } : {}) },
      usage: { turns: 4, inputTokens: 1, outputTokens: 1, costUsd: 0 },
    });
    expect(body).toContain('**Reproducing tests**');
    expect(body).toContain(`- \`${reproducing}\`: passes`);
  });
});
