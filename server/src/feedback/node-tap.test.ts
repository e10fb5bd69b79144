import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HostSandbox } from '../sandbox/testing/host-sandbox';
import type { ExecResult } from '../sandbox/types';
import { classifyRun } from './infrastructure';
import { tapCoverageOff } from './node-tap';
import { detectJsRunner, parseTestOutput, testCommand } from './runners';
import { selectableFiles, selectedPlan, wholeCommandPlan } from './suite-plan';
import { runSuite } from './suite-run';
import { planTestCommand } from './test-command';

/*
 * Real node-tap output: testdata/node-tap-16.3.10.tap and -18.8.0.tap are the stdout of
 * `tap --reporter=tap test/*.js` (tap 16.3.10 and 18.8.0 from the npm registry, Node 22) on:
 *   test/fail.js: t.test('parse') { equal 'parses three'; t.test('negative') { equal 'parses
 *     minus one'; ok(false) 'NaN stays NaN' } }
 *   test/pass.js: t.test('parse') { equal 'parses one'; t.test('nested group') { equal 'parses
 *     two' } }; t.ok 'top level assertion'
 *   test/skip.js: t.test('later', { skip: 'not yet' }); t.test('planned', { todo: true }); t.pass('runs')
 * Both exited 1. tap 18's own summary: `{ total: 9, pass: 6, fail: 1, todo: 1, skip: 1 }`.
 * -coverage.tap: `tap --reporter=tap test/pass.js` alone, every point ok, exit 1 all the same:
 * lib/num.js has an uncovered function and both versions check 100% coverage by default.
 */
const data = (name: string) => readFileSync(join(import.meta.dirname, 'testdata', name), 'utf8');
const files = new Set(['package.json', 'lib/num.js', 'test/fail.js', 'test/pass.js', 'test/skip.js']);
const count = (cases: Array<{ outcome: string }>, outcome: string) => cases.filter((testCase) => testCase.outcome === outcome).length;

describe('node-tap output', () => {
  for (const name of ['node-tap-16.3.10.tap', 'node-tap-18.8.0.tap']) {
    it(`counts each leaf point once and names the failing one file > parent > child (${name})`, () => {
      const run = parseTestOutput('tap', data(name), files);
      expect(run.reported).toBe(true);
      expect([count(run.cases, 'passed'), count(run.cases, 'failed'), count(run.cases, 'skipped')]).toEqual([6, 1, 2]);
      expect(run.cases.filter((testCase) => testCase.outcome === 'failed')).toEqual([
        { id: 'test/fail.js > parse > negative > NaN stays NaN', file: 'test/fail.js', outcome: 'failed', message: 'NaN stays NaN' },
      ]);
      expect(run.cases.map((testCase) => testCase.id)).toContain('test/pass.js > parse > nested group > parses two');
      expect(run.cases.map((testCase) => testCase.id)).toContain('test/pass.js > top level assertion');
      expect(run.cases.find((testCase) => testCase.id === 'test/skip.js > later')?.outcome).toBe('skipped');
      expect(run.failures).toHaveLength(1);
      expect(run.failures[0]).toMatch(/^✗ test\/fail\.js > parse > negative > NaN stays NaN\n/);
      // A red run with a failing point is code, not infrastructure.
      expect(classifyRun({ runner: 'tap', command: 'npm test', result: exec({ exitCode: 1, stdout: data(name) }), parsed: run, changedFiles: [], timeoutSeconds: 600 })).toBeUndefined();
    });
  }

  it('a compared value is the message of the failure', () => {
    const stdout = [
      '# Subtest: test/num.js',
      '    not ok 1 - should be equal',
      '      ---',
      '      found: 2',
      '      wanted: 3',
      '      compare: ===',
      '      ...',
      '    1..1',
      'not ok 1 - test/num.js',
      '1..1',
    ].join('\n');
    expect(parseTestOutput('tap', stdout, new Set(['test/num.js'])).cases).toEqual([
      { id: 'test/num.js > should be equal', file: 'test/num.js', outcome: 'failed', message: 'found: 2; wanted: 3' },
    ]);
  });

  it('in a workspace member the printed file maps to the repository path', () => {
    const member = new Set(['packages/a/test/fail.js', 'packages/a/test/pass.js', 'packages/a/test/skip.js']);
    const run = parseTestOutput('tap', data('node-tap-18.8.0.tap'), member, 'packages/a');
    expect(run.cases.find((testCase) => testCase.outcome === 'failed')?.id).toBe('packages/a/test/fail.js > parse > negative > NaN stays NaN');
    expect(run.failures[0]).toMatch(/^✗ packages\/a\/test\/fail\.js > /);
  });
});

describe('node-tap commands', () => {
  // npm/ini's scripts (tap 16): the lint runs after the tests through npm's posttest.
  const ini = JSON.stringify({
    name: 'ini',
    scripts: { test: 'tap', posttest: 'npm run lint', lint: 'eslint "**/*.js"', postlint: 'template-oss-check', snap: 'tap' },
    devDependencies: { tap: '^16.0.1' },
  });

  it('is detected from the script and the devDependencies, not from tape or a tap formatter', () => {
    expect(detectJsRunner(ini)).toBe('tap');
    expect(detectJsRunner(JSON.stringify({ scripts: { test: 'node run.js' }, devDependencies: { tap: '18.8.0' } }))).toBe('tap');
    expect(detectJsRunner(JSON.stringify({ scripts: { test: 'tape test/*.js | tap-spec' } }))).not.toBe('tap');
    expect(planTestCommand('npm test', JSON.stringify({ scripts: { test: 'tape test/*.js | tap-spec' } })).runner).toBe('tape');
  });

  it("runs npm/ini's test with the TAP reporter, then its posttest lint as written", () => {
    const plan = planTestCommand('npm test', ini);
    expect(plan.runner).toBe('tap');
    expect(plan.after.map((step) => step.text)).toEqual(['eslint "**/*.js"', 'template-oss-check']);
    const whole = wholeCommandPlan(plan);
    expect(whole.command).toBe('npm test → tap --reporter=tap && eslint "**/*.js" && template-oss-check');
    // The whole command keeps the repository's coverage check.
    expect(whole.script).not.toMatch(/coverage/);
  });

  it("a selection replaces the script's paths, drops its reporter and turns coverage off", () => {
    const plan = planTestCommand('npm test', JSON.stringify({ scripts: { test: 'tap -R spec --timeout 60 test/*.js' } }));
    expect(plan.invocation?.flags.map((word) => word.value)).toEqual(['--timeout', '60']);
    expect(selectableFiles(plan, ['test/fail.js', 'lib/num.js'])).toEqual({ files: ['test/fail.js'] });
    const selected = selectedPlan(plan, [{ file: 'test/fail.js' }]);
    expect(selected.script).toContain(`tap --timeout 60 --reporter=tap ${tapCoverageOff('tap')} test/fail.js`);
    expect(testCommand('tap', [{ file: 'test/fail.js' }])).toContain('--reporter=tap');
    expect(testCommand('tap', undefined)).toBe('npx --no-install tap --reporter=tap');
  });

  it('picks the coverage flag each version accepts (run by a real shell)', () => {
    const flag = (version: string) => execFileSync('sh', ['-c', `printf %s ${tapCoverageOff(`echo ${version}`)}`], { encoding: 'utf8' });
    expect(flag('16.3.10')).toBe('--no-coverage');
    expect(flag('15.0.9')).toBe('--no-coverage');
    expect(flag('18.8.0')).toBe('--disable-coverage');
    expect(flag('21.1.0')).toBe('--disable-coverage');
  });

  it('a coverage failure after green tests is no red test: the command is the one failing case', async () => {
    // A stand-in `tap` that replays tap 16's real run of test/pass.js alone: every point
    // ok, the coverage errors on stderr, exit 1 (testdata/node-tap-16.3.10-coverage.tap).
    const repo = mkdtempSync(join(tmpdir(), 'dockhand-node-tap-'));
    try {
      mkdirSync(join(repo, 'node_modules/.bin'), { recursive: true });
      const replay = join(import.meta.dirname, 'testdata', 'node-tap-16.3.10-coverage.tap');
      const stderr = 'ERROR: Coverage for functions (50%) does not meet global threshold (100%)';
      writeFileSync(join(repo, 'node_modules/.bin/tap'), `#!/bin/sh\ncat '${replay}'\necho '${stderr}' >&2\nexit 1\n`, { mode: 0o755 });
      const plan = wholeCommandPlan(planTestCommand('tap', undefined));
      const run = await runSuite(new HostSandbox(repo, 'HEAD'), plan, { files, changed: [], timeoutSeconds: 60 });
      expect(run.infrastructure).toBeUndefined();
      expect(run.cases.filter((testCase) => testCase.outcome === 'passed')).toHaveLength(3);
      expect(run.cases.filter((testCase) => testCase.outcome === 'failed')).toEqual([
        { id: 'tap → tap --reporter=tap (exited with 1)', outcome: 'failed', message: 'exited with 1', kind: 'exit_status' },
      ]);
      expect(run.failures[0]).toContain(stderr);
    } finally {
      rmSync(repo, { recursive: true, force: true });
    }
  });
});

function exec(overrides: Partial<ExecResult>): ExecResult {
  return { exitCode: 0, stdout: '', stderr: '', truncated: false, timedOut: false, durationMs: 10, ...overrides };
}
