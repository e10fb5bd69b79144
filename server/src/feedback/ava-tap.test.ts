import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { EnvironmentRecipe } from '@dockhand/protocol';
import { describe, expect, it } from 'vitest';
import { createRepoOfFiles } from '../../../test/support/fixture-repo';
import { HostSandbox } from '../sandbox/testing/host-sandbox';
import { SmartFeedbackEngine } from './engine';
import { parseTestOutput } from './runners';
import { parseFlatTap } from './tap';

/*
 * ava's TAP on ava's real output (ava 6 from npm, in the cache .ci/needs/feedback.sh fills): ava
 * writes a comment for every hook that ran (`# function › beforeEach hook for try-catch-remove`,
 * a titled hook's title) and `#   <line>` for each t.log. Read as tape's test names they went in
 * front of every later point (census: `… beforeEach hook for … > function › try-catch-remove`),
 * so one test's id changed from run to run with the order the workers finished in.
 */

const JEST = process.env.DOCKHAND_FEEDBACK_JEST ?? join(homedir(), '.cache/dockhand/feedback-jest');

const FILES = {
  '.gitignore': 'node_modules\n',
  'package.json': JSON.stringify({ name: 'ava-hooks', scripts: { test: 'ava' }, ava: { files: ['test/**/*.js'] } }),
  'test/function.js': [
    "const test = require('ava');",
    "test.before('named setup', () => {});",
    "test.beforeEach((t) => { t.context.n = 1; t.log('prepared'); });",
    'test.afterEach.always(() => {});',
    "test('try-catch-remove', (t) => { t.log('a log line'); t.is(t.context.n, 1); });",
    "test('breaks', (t) => t.is(t.context.n, 2));",
    "test.skip('skipped one', (t) => t.pass());",
    '',
  ].join('\n'),
  'test/other.js': "const test = require('ava');\ntest.beforeEach(() => {});\ntest('works', (t) => t.pass());\n",
};

const EXPECTED = [
  ['function › breaks', 'failed'],
  ['function › skipped one', 'skipped'],
  ['function › try-catch-remove', 'passed'],
  ['other › works', 'passed'],
];

class RecipeSandbox extends HostSandbox {
  constructor(root: string, baseSha: string, readonly environment: EnvironmentRecipe) {
    super(root, baseSha);
  }
}

function avaRepository() {
  const repo = createRepoOfFiles('ava-hooks', FILES, 'fixture');
  mkdirSync(join(repo.path, 'node_modules/.bin'), { recursive: true });
  symlinkSync(join(JEST, 'node_modules/ava'), join(repo.path, 'node_modules/ava'));
  symlinkSync(join(JEST, 'node_modules/.bin/ava'), join(repo.path, 'node_modules/.bin/ava'));
  return repo;
}

const ids = (cases: Array<{ id: string; outcome: string }>) => cases.map((testCase) => [testCase.id, testCase.outcome]).sort();

describe("ava's hook and log comments", { timeout: 120_000 }, () => {
  it('name no test: `ava --tap` read as ava gives each test its own title', () => {
    const repo = avaRepository();
    // One test fails: ava exits 1 with the report on stdout.
    const { stdout } = spawnSync(join(repo.path, 'node_modules/.bin/ava'), ['--tap'], { cwd: repo.path, encoding: 'utf8', env: { ...process.env, CI: '1' } });
    // The real output has what misled the parser.
    expect(stdout).toMatch(/^# function › beforeEach hook for try-catch-remove$/m);
    expect(stdout).toMatch(/^# function › named setup$/m);
    expect(stdout).toMatch(/^# {3}a log line$/m);
    const files = new Set(Object.keys(FILES));
    expect(ids(parseTestOutput('ava', stdout, files).cases)).toEqual(EXPECTED);
    // The same output from a command Dockhand does not know (an unknown runner step) is read as ava's by its hook comments.
    expect(ids(parseFlatTap(stdout, () => undefined).cases)).toEqual(EXPECTED);
    // tape's own test named like a hook keeps naming its assertions.
    expect(ids(parseFlatTap('TAP version 13\n# before hook\nok 1 works\n1..1\n', () => undefined).cases)).toEqual([['before hook > works', 'passed']]);
  });

  it('through the side channel, the same ids on every run', async () => {
    const repo = avaRepository();
    const environment = { repo: 'fixture/ava-hooks', install: { command: 'npm ci', source: 'default' }, lifecycleScripts: true, skipScripts: [], egressHosts: [], node: { version: process.versions.node, source: 'test' }, test: { command: 'npm test', source: 'package.json' } } as EnvironmentRecipe;
    const engine = new SmartFeedbackEngine({ repo: 'fixture/ava-hooks' });
    for (let run = 0; run < 2; run++) {
      const full = await engine.runTests(new RecipeSandbox(repo.path, repo.sha, environment), { scope: 'full' });
      expect(full.infrastructure).toBeUndefined();
      expect(ids(full.cases)).toEqual(EXPECTED);
    }
  });
});
