import type { EnvironmentRecipe } from '@dockhand/protocol';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAgent } from '../agent/loop';
import { RecordingApprover } from '../agent/testing/context';
import { MemoryEventSink } from '../agent/testing/memory-sink';
import { ScriptedModel } from '../agent/testing/scripted-model';
import { DockerSandbox } from '../sandbox/docker-sandbox';
import { DockerSandboxDriver } from '../sandbox/docker-driver';
import { checkSandboxHost } from '../sandbox/host-check';
import { SmartFeedbackEngine } from './engine';

/*
 * A uvu repository (uvu 0.5.6 from the npm registry, .ci/needs/feedback.sh) in a real gVisor
 * sandbox of `dockhand/base`, run by the agent loop with a scripted model: the task's
 * reproducing test is named by its test name (`submit --test NaN`). uvu prints a dot for a
 * passing test, so once the fix makes it green no case of the run carries its name; the verified
 * stop must still see it pass (its suite ran as many tests as at the base and uvu named no failure
 * of it), or the task could never finish ("did not run in the full suite").
 */

const ROOT = resolve(import.meta.dirname, '../../..');
const IMAGE = 'dockhand/base:latest';
const RUNNERS = process.env.DOCKHAND_FEEDBACK_RUNNERS ?? join(homedir(), '.cache/dockhand/feedback-runners');

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

const RECIPE: EnvironmentRecipe = {
  repo: 'fixture/uvu-repo',
  install: { command: 'npm install', source: 'default' },
  lifecycleScripts: true,
  skipScripts: [],
  egressHosts: [],
  test: { command: 'npm test', source: 'package.json' },
};

let driver: DockerSandboxDriver;
let dir: string;
const sandboxes: DockerSandbox[] = [];

function git(cwd: string, ...args: string[]): string {
  // Fixed dates: the same files give the same SHA, so the image of an earlier run is reused.
  const env = { ...process.env, GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z', GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z' };
  return execFileSync('git', ['-c', 'user.name=Fixture', '-c', 'user.email=fixture@dockhand.invalid', ...args], { cwd, encoding: 'utf8', env }).trim();
}

/** The repository with uvu in node_modules, committed, as an image the way a snapshot holds it. */
function uvuImage(): { image: string; sha: string } {
  if (!existsSync(join(RUNNERS, 'node_modules/.bin/uvu'))) execFileSync('bash', [join(ROOT, '.ci/needs/feedback.sh')], { stdio: 'inherit' });
  dir = mkdtempSync(join(tmpdir(), 'dockhand-uvu-reproducing-'));
  for (const [path, text] of Object.entries(FILES)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'uvu repo');
  cpSync(join(RUNNERS, 'node_modules'), join(dir, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  const sha = git(dir, 'rev-parse', 'HEAD');
  const image = `dockhand-test/uvu-reproducing:${sha.slice(0, 12)}`;
  execFileSync('docker', ['build', '-q', '-t', image, '-f-', dir], { input: `FROM ${IMAGE}\nCOPY --chown=1000:1000 . /workspace\n`, stdio: ['pipe', 'ignore', 'inherit'] });
  return { image, sha };
}

beforeAll(async () => {
  execFileSync(join(ROOT, 'sandbox-images/base/build.sh'), { stdio: ['ignore', 'ignore', 'inherit'] });
  const docker = new Docker();
  const host = await checkSandboxHost(docker);
  expect(host.runtime).toBe('runsc');
  driver = new DockerSandboxDriver({ docker, ownerId: 'uvu-reproducing-int', runtime: host.runtime });
}, 600_000);

afterAll(async () => {
  await Promise.all(sandboxes.map((sandbox) => sandbox.destroy()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a uvu reproducing test named by its test name', { timeout: 300_000 }, () => {
  it('fails at the base, and the task finishes verified once the fix makes it pass (uvu prints only a dot for it)', async () => {
    const { image, sha } = uvuImage();
    const sandbox = await driver.create({ image, baseSha: sha, labels: { 'dockhand.task': 'uvu-reproducing' } });
    if (!(sandbox instanceof DockerSandbox)) throw new Error('the driver gave no DockerSandbox');
    sandboxes.push(sandbox);
    sandbox.environment = RECIPE;
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
