import type { EnvironmentRecipe } from '@dockhand/protocol';
import { mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRepoOfFiles } from '../../../test/support/fixture-repo';
import { runAgent } from '../agent/loop';
import { RecordingApprover } from '../agent/testing/context';
import { MemoryEventSink } from '../agent/testing/memory-sink';
import { ScriptedModel } from '../agent/testing/scripted-model';
import { HostSandbox } from '../sandbox/testing/host-sandbox';
import { SmartFeedbackEngine } from './engine';
import { judgeSteps, judgesTheChange, unjudgeableCases } from './judgement';
import type { TestStepOutcome } from './types';

/*
 * Verification never on an opaque step (issue 32), on repositories these tests write, with the
 * real engine and the agent loop on a host-directory sandbox: a step counted by an exit status
 * that failed at the base cannot judge the change (neither refuses `finish` nor counts as
 * evidence), a run with no other step says so, and a `jest && tsd && tsc` chain red at the base in
 * tsd is judged on jest's tests after a fix. jest, tsd and tsc come from .ci/needs/feedback.sh's
 * caches. tox and `coverage run -m unittest` inside gVisor: judgement.int.test.ts.
 */

const JEST = process.env.DOCKHAND_FEEDBACK_JEST ?? join(homedir(), '.cache/dockhand/feedback-jest');
const TSD = process.env.DOCKHAND_FEEDBACK_TSD ?? join(homedir(), '.cache/dockhand/feedback-tsd');

class RecipeSandbox extends HostSandbox {
  constructor(root: string, baseSha: string, readonly environment: EnvironmentRecipe, extraPath: string[] = []) {
    super(root, baseSha, extraPath);
  }
}

function recipe(repo: string, test: string): EnvironmentRecipe {
  return { repo, install: { command: 'npm ci', source: 'default' }, lifecycleScripts: true, skipScripts: [], egressHosts: [], node: { version: process.versions.node, source: 'test' }, test: { command: test, source: 'package.json' } };
}

/**
 * node_modules as an install leaves them: jest's packages and bins linked one by one, and tsd (which
 * the type tests import); tsd's and tsc's bins come from their cache on PATH, so each tool keeps its
 * own dependencies (tsd's jest-diff 29 beside jest's 30).
 */
function linkModules(root: string): void {
  mkdirSync(join(root, 'node_modules/.bin'), { recursive: true });
  for (const name of readdirSync(join(JEST, 'node_modules'))) if (name !== '.bin' && !name.startsWith('.')) symlinkSync(join(JEST, 'node_modules', name), join(root, 'node_modules', name));
  for (const bin of readdirSync(join(JEST, 'node_modules/.bin'))) symlinkSync(join(JEST, 'node_modules/.bin', bin), join(root, 'node_modules/.bin', bin));
  symlinkSync(join(TSD, 'node_modules/tsd'), join(root, 'node_modules/tsd'));
}

const finish = { name: 'finish', input: { summary: 'fixed' } };

// tsd and tsc take up to a minute each on a busy machine; the chain runs three times (twice at the base, once after the fix).
describe('steps that cannot judge the change', { timeout: 900_000 }, () => {
  it('a `jest && tsd && tsc` chain red at the base in tsd: a fix is judged on jest\'s tests, tsd cannot judge, finish is not refused', async () => {
    // jest's `roots` leave out test/e2e (another script runs it); tsd's tests in test/types; tsd red at the base.
    const repo = createRepoOfFiles('jest-tsd-chain', {
      '.gitignore': 'node_modules\n',
      // `types: []`: no @types of jest's install to check (a minute each on a busy machine).
      'package.json': JSON.stringify({
        name: 'add', version: '1.0.0', main: 'index.js', types: 'index.d.ts',
        scripts: { test: 'jest && tsd && tsc' },
        jest: { roots: ['<rootDir>/test/unit'] },
        tsd: { directory: 'test/types', compilerOptions: { types: [] } },
      }),
      'tsconfig.json': JSON.stringify({ compilerOptions: { strict: true, noEmit: true, module: 'commonjs', target: 'es2020', types: [] }, files: ['index.d.ts'] }),
      'index.js': "'use strict';\nmodule.exports = function add(a, b) {\n  return a + b;\n};\n",
      'index.d.ts': 'declare function add(a: number, b: number): string;\nexport = add;\n',
      'lib/format.js': "'use strict';\nmodule.exports = function format(value) {\n  return '#' + value;\n};\n",
      'test/unit/add.test.js': "const add = require('../../index');\ntest('adds', () => expect(add(1, 2)).toBe(3));\ntest('adds negatives', () => expect(add(-1, -2)).toBe(-3));\n",
      'test/e2e/format.test.js': "const format = require('../../lib/format');\ntest('formats', () => expect(format(3)).toBe('3'));\n",
      'test/types/index.test-d.ts': "import {expectType} from 'tsd';\nimport add = require('../..');\n\nexpectType<number>(add(1, 2));\n",
    }, 'fixture');
    linkModules(repo.path);
    const sandbox = new RecipeSandbox(repo.path, repo.sha, recipe('fixture/jest-tsd', 'npm test'), [join(TSD, 'node_modules/.bin')]);
    const engine = new SmartFeedbackEngine({ repo: 'fixture/jest-tsd' });
    const baseline = await engine.baseline(sandbox);
    expect(baseline?.infrastructure).toBeUndefined();
    expect(baseline?.steps?.map((step) => [step.key, step.counted, step.exitCode, step.judgement])).toEqual([
      ['jest', 'tests', 0, 'tests'],
      ['tsd', 'exit status', 1, 'cannot judge'],
      ['tsc', 'exit status', 0, 'exit status'],
    ]);
    // Why tsd failed is kept, not the command line.
    expect(baseline?.steps?.[1]?.tail).toContain('Argument of type string is not assignable to parameter of type number.');

    const events = new MemoryEventSink();
    const fix = { name: 'edit_file', input: { path: 'lib/format.js', command: 'replace', old_text: "'#' + value", new_text: 'String(value)' } };
    const model = new ScriptedModel([{ tools: [fix] }, { tools: [finish] }, { text: 'refused' }, { text: 'refused' }]);
    const ticket = { kind: 'text' as const, title: 'format(3) is "#3"', body: 'format should print the number alone.' };
    const outcome = await runAgent({ task: { ticket }, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });

    // Before: jest, given the selected test/e2e/format.test.js outside its roots, printed "No tests
    // found" with the files as its pattern and exited 1 without a report: "jest --json … (exited with 1)",
    // a new failure, and finish was refused.
    const finishes = events.ofType('tool.finished').filter((event) => event.data.name === 'finish');
    expect(finishes.map((event) => event.data.isError)).toEqual([false]);
    expect(outcome.status).toBe('finished_verified');
    const runs = events.ofType('tests.finished').map((event) => event.data);
    const selected = runs[0];
    expect(selected?.selectionReason).toContain('the runner found no tests in the selected files: ran the whole command');
    expect(selected).toMatchObject({ ok: true, passed: 2 });
    expect(selected?.judged).toBeUndefined();
    expect(selected?.steps?.map((step) => [step.name, step.counted, step.judgement, step.passed])).toEqual([
      ['npm test → jest && tsd && tsc', 'tests', 'tests', 2],
      ['tsd', 'exit status', 'cannot judge', 0],
      ['tsc', 'exit status', 'exit status', 0],
    ]);
  });

  it('a selected jest test under a route group `(app)` runs as itself (jest reads its arguments as regular expressions)', async () => {
    const repo = createRepoOfFiles('jest-route-group', {
      '.gitignore': 'node_modules\n',
      'package.json': JSON.stringify({ name: 'routes', scripts: { test: 'jest' } }),
      'src/routes/(app)/page.js': "module.exports = () => 'page';\n",
      'src/routes/(app)/page.test.js': "const page = require('./page');\ntest('renders', () => expect(page()).toBe('page'));\n",
    }, 'fixture');
    symlinkSync(join(JEST, 'node_modules'), join(repo.path, 'node_modules'));
    const sandbox = new RecipeSandbox(repo.path, repo.sha, recipe('fixture/routes', 'npm test'));
    const engine = new SmartFeedbackEngine({ repo: 'fixture/routes' });
    await sandbox.writeFile('src/routes/(app)/page.js', "module.exports = () => 'page!';\n");
    const selected = await engine.runTests(sandbox, { scope: 'selected' });
    // Before: `(app)` was a regular-expression group, jest found no test and the selection fell back to the whole command.
    expect(selected.wholeCommand).toBe(false);
    expect(selected.command).toContain("'src/routes/\\(app\\)/page.test.js'");
    expect(selected.cases.map((testCase) => [testCase.id, testCase.outcome])).toEqual([['src/routes/(app)/page.test.js > renders', 'failed']]);
  });

  it('a step judged only by its exit status that fails at the base cannot judge: a different exit code refuses nothing, and the task says no step can judge', async () => {
    // A suite Dockhand cannot read per test (its runner prints its own lines); red at the base.
    const repo = createRepoOfFiles('opaque', {
      'package.json': JSON.stringify({ name: 'opaque', scripts: { test: 'node check.js' } }),
      'check.js': "const value = require('./src/value');\nconst failures = [value.a === 1, value.b === 2, value.c === 3].filter((ok) => !ok).length;\nconsole.log('checks failed:', failures);\nprocess.exit(failures);\n",
      'src/value.js': 'module.exports = { a: 1, b: 0, c: 3 };\n',
    }, 'fixture');
    const sandbox = new RecipeSandbox(repo.path, repo.sha, recipe('fixture/opaque', 'npm test'));
    const engine = new SmartFeedbackEngine({ repo: 'fixture/opaque' });
    const baseline = await engine.baseline(sandbox);
    expect(baseline).toMatchObject({ preExistingFailures: ['npm test → node check.js (exited with 1)'] });

    const events = new MemoryEventSink();
    // The change breaks `a` as well: the opaque step now exits 2. It cannot tell this apart from a fix.
    const change = { name: 'edit_file', input: { path: 'src/value.js', command: 'replace', old_text: 'a: 1, b: 0', new_text: 'a: 0, b: 0' } };
    const model = new ScriptedModel([{ tools: [change] }, { tools: [finish] }, { text: 'refused' }, { text: 'refused' }]);
    const ticket = { kind: 'text' as const, title: 'b is wrong', body: 'value.b should be 2.' };
    const outcome = await runAgent({ task: { ticket }, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });

    // Before: `node check.js (exited with 2)` was a new failure ("the server ran the tests and they are red").
    const finishes = events.ofType('tool.finished').filter((event) => event.data.name === 'finish');
    expect(finishes.map((event) => event.data.isError)).toEqual([false]);
    expect(finishes[0]?.data.output).toContain('No step of the test command can judge this change: `node check.js` is counted by exit status alone and failed at the base commit');
    expect(outcome.status).toBe('finished_verified');
    const runs = events.ofType('tests.finished').map((event) => event.data);
    expect(runs.length).toBeGreaterThan(0);
    for (const run of runs) {
      expect(run).toMatchObject({ ok: true, judged: false });
      expect(run.steps?.map((step) => [step.name, step.judgement, step.exitCode])).toEqual([['npm test → node check.js', 'cannot judge', 2]]);
      // The step's own last words, for the reviewer.
      expect(run.steps?.[0]?.tail).toBe('checks failed: 2');
    }
  });
});

describe('judgeSteps', () => {
  const step = (name: string, counted: 'tests' | 'exit status', exitCode: number, key?: string): TestStepOutcome => ({ name, counted, exitCode, passed: counted === 'tests' ? 2 : 0, failed: exitCode === 0 ? 0 : 1, ...(key ? { key } : {}) });

  it("matches a selection's runner step to the base's by the step as written, and excuses only the red exits of steps that cannot judge", () => {
    const base = { command: 'npm test', runner: 'unknown' as const, passed: 2, failed: 1, flaky: [], preExistingFailures: [], seconds: 1, steps: [step('npm test → jest && tsd', 'exit status', 1, 'jest'), step('tsd', 'exit status', 1, 'tsd'), step('tsc', 'exit status', 0, 'tsc')] };
    const now = [step('jest --json test/a.test.js', 'exit status', 1, 'jest'), step('tsd', 'exit status', 2, 'tsd'), step('tsc', 'exit status', 2, 'tsc')];
    judgeSteps(now, base);
    expect(now.map((outcome) => outcome.judgement)).toEqual(['cannot judge', 'cannot judge', 'exit status']);
    const cases = ['jest --json test/a.test.js (exited with 1)', 'tsd (exited with 2)', 'tsc (exited with 2)', 'tsd --strict (exited with 2)'].map((id) => ({ id, outcome: 'failed' as const, kind: 'exit_status' as const }));
    expect([...unjudgeableCases(now, cases)]).toEqual(['jest --json test/a.test.js (exited with 1)', 'tsd (exited with 2)']);
    expect(judgesTheChange(now, cases)).toBe(true);
    expect(judgesTheChange(now.slice(0, 2), cases)).toBe(false);
  });

  it('judges every step as counted without a baseline', () => {
    const now = [step('lint', 'exit status', 1), step('jest', 'tests', 0)];
    judgeSteps(now, undefined);
    expect(now.map((outcome) => outcome.judgement)).toEqual(['exit status', 'tests']);
  });
});
