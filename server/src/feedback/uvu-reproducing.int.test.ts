import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npmTestRecipe, startSnapshotSandboxes, type SnapshotSandboxes } from '../../../test/support/snapshot-sandbox';
import { runAgent } from '../agent/loop';
import { RecordingApprover } from '../agent/testing/context';
import { MemoryEventSink } from '../agent/testing/memory-sink';
import { ScriptedModel } from '../agent/testing/scripted-model';
import { SmartFeedbackEngine } from './engine';

/*
 * A uvu repository (uvu 0.5.6 from the npm registry, .ci/needs/feedback.sh) in a real gVisor
 * sandbox of `dockhand/base`, run by the agent loop with a scripted model: the task's
 * reproducing test is named by its test name (`submit --test NaN`). uvu prints a dot for a
 * passing test, so once the fix makes it green no case of the run carries its name; the verified
 * stop must still see it pass (its suite ran as many tests as at the base and uvu named no failure
 * of it), or the task could never finish ("did not run in the full suite").
 */

const FILES: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'uvu-repo', private: true, scripts: { test: 'uvu test' } }, null, 2),
  '.gitignore': 'node_modules/\n',
  // The bug: NaN is never equal to NaN here.
  'src/dequal.js': `'use strict';
function dequal(foo, bar) {
  if (foo === bar) return true;
  if (foo && bar && typeof foo === 'object' && typeof bar === 'object' && foo.constructor === bar.constructor) {
    const keys = Object.keys(foo);
    if (keys.length !== Object.keys(bar).length) return false;
    return keys.every((key) => dequal(foo[key], bar[key]));
  }
  return false;
}
module.exports = { dequal };
`,
  'test/index.js': `'use strict';
const { test } = require('uvu');
const assert = require('uvu/assert');
const { dequal } = require('../src/dequal');

test('scalars', () => { assert.ok(dequal(1, 1)); assert.not.ok(dequal(1, 2)); });
test('NaN', () => { assert.ok(dequal(NaN, NaN), 'NaN equals NaN'); });
test('objects', () => { assert.ok(dequal({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })); });
test.run();
`,
  'test/arrays.js': `'use strict';
const { suite } = require('uvu');
const assert = require('uvu/assert');
const { dequal } = require('../src/dequal');

const arrays = suite('arrays');
arrays('equal', () => { assert.ok(dequal([1, 2], [1, 2])); });
arrays('length', () => { assert.not.ok(dequal([1], [1, 2])); });
arrays.run();
`,
};

const RECIPE = npmTestRecipe('fixture/uvu-repo', 'npm install');

let sandboxes: SnapshotSandboxes;

beforeAll(async () => {
  sandboxes = await startSnapshotSandboxes('uvu-reproducing-int');
}, 600_000);

afterAll(async () => {
  await sandboxes?.close();
});

describe('a uvu reproducing test named by its test name', { timeout: 300_000 }, () => {
  it('fails at the base, and the task finishes verified once the fix makes it pass (uvu prints only a dot for it)', async () => {
    // The repository with uvu in node_modules, committed, as an image the way a snapshot holds it.
    const sandbox = await sandboxes.create({ name: 'uvu-reproducing', repo: { files: FILES, message: 'uvu repo' }, nodeModules: 'runners' }, { task: 'uvu-reproducing', environment: RECIPE });
    const events = new MemoryEventSink();
    const engine = new SmartFeedbackEngine({ repo: RECIPE.repo });
    const fix = { name: 'edit_file', input: { path: 'src/dequal.js', command: 'replace', old_text: '  return false;\n}\nmodule', new_text: '  return foo !== foo && bar !== bar;\n}\nmodule' } };
    const finish = { name: 'finish', input: { summary: 'dequal(NaN, NaN) is true: NaN is equal to itself' } };
    const model = new ScriptedModel([{ tools: [fix] }, { tools: [finish] }]);
    const ticket = { kind: 'text' as const, title: 'dequal(NaN, NaN) is false', body: 'Two NaN values should be equal.' };
    const outcome = await runAgent({ task: { ticket, reproducingTests: ['NaN'] }, sandbox, model, events, approver: new RecordingApprover(), feedback: engine });

    const finishes = events.ofType('tool.finished').filter((event) => event.data.name === 'finish');
    expect(finishes.map((event) => event.data.output)[0]).not.toContain('did not run');
    expect(outcome.status).toBe('finished_verified');
    const runs = events.ofType('tests.finished').map((event) => event.data);
    // Every run after the fix, the selection and the full suite, has it passed.
    expect(runs.length).toBeGreaterThan(0);
    for (const run of runs) expect(run).toMatchObject({ ok: true, failed: 0, reproducing: [{ id: 'NaN', outcome: 'passed' }] });
    expect(runs.at(-1)).toMatchObject({ scope: 'full', passed: 5 });
  });
});
