import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExecResult } from '../sandbox/types';
import { classifyRun } from './infrastructure';
import { detectJsRunner, parseTestOutput } from './runners';
import { selectableFiles, selectedPlan, wholeCommandPlan } from './suite-plan';
import { planTestCommand } from './test-command';
import { reproducingOutcomes } from './reproducing';
import { uvuArguments } from './uvu';

/*
 * Real uvu output: testdata/uvu-*.txt were written by uvu 0.5.6 and 0.3.2 (dequal's) with esm
 * 3.2.25 under Node 20, `uvu -r esm test` on test/fail.js (suite `equal`: objects fails a deep
 * equal, numbers passes, "throws plain" throws), test/math.js (the default suite: 2 pass, 1
 * test.skip; suite `strings`: 2 pass), test/only.js (1 pass) and test/sub/deep.js (1 fails);
 * -fail with colour (uvu forces it), -pass (`test 'math|only'`) and 0.3.2 with NO_COLOR=1;
 * -load-error: a file that throws while loading; -fixed: the same suite with `objects` and
 * deep.js's `same name` made to pass ("throws plain" still throws); -skipped: `objects` turned
 * into `equal.skip` instead.
 */
const data = (name: string) => readFileSync(join(import.meta.dirname, 'testdata', name), 'utf8');
const files = new Set(['package.json', 'src/index.js', 'test/fail.js', 'test/math.js', 'test/only.js', 'test/sub/deep.js']);
const count = (cases: Array<{ outcome: string }>, outcome: string) => cases.filter((testCase) => testCase.outcome === outcome).length;

describe('uvu output', () => {
  for (const name of ['uvu-0.5.6-fail.txt', 'uvu-0.3.2-fail.txt']) {
    it(`counts as uvu's summary does and names the failing tests with file and suite (${name})`, () => {
      const run = parseTestOutput('uvu', data(name), files);
      expect(run.reported).toBe(true);
      // Total 9, Passed 6, Skipped 1.
      expect([count(run.cases, 'passed'), count(run.cases, 'failed'), count(run.cases, 'skipped')]).toEqual([6, 3, 1]);
      expect(run.cases.filter((testCase) => testCase.outcome === 'failed')).toEqual([
        { id: 'test/fail.js > equal > objects', file: 'test/fail.js', outcome: 'failed', message: 'Expected values to be deeply equal:  (equal)' },
        { id: 'test/fail.js > equal > throws plain', file: 'test/fail.js', outcome: 'failed', message: 'boom here' },
        { id: 'test/sub/deep.js > same name', file: 'test/sub/deep.js', outcome: 'failed', message: 'two is not three  (is)' },
      ]);
      expect(run.cases.filter((testCase) => testCase.file === 'test/math.js').map((testCase) => testCase.id)).toEqual([
        'test/math.js > (passing 1)',
        'test/math.js > (passing 2)',
        'test/math.js > strings > (passing 1)',
        'test/math.js > strings > (passing 2)',
      ]);
      expect(run.failures[0]).toMatch(/^✗ test\/fail\.js > equal > objects\n/);
      expect(run.failures[0]).toContain('"a":·2');
      expect(classifyRun({ runner: 'uvu', command: 'npm test', result: exec({ exitCode: 1, stdout: data(name) }), parsed: run, changedFiles: [], timeoutSeconds: 600 })).toBeUndefined();
    });
  }

  it("reads file headers relative to uvu's directory, announced by the run, where a name alone is ambiguous", () => {
    const both = new Set([...files, 'src/fail.js', 'src/math.js']);
    const ids = (stdout: string) => parseTestOutput('uvu', stdout, both).cases.filter((testCase) => testCase.outcome === 'failed').map((testCase) => testCase.id);
    expect(ids(data('uvu-0.5.6-fail.txt'))[0]).toBe('fail.js > equal > objects');
    expect(ids(`# dockhand-uvu-dir: test\n${data('uvu-0.5.6-fail.txt')}`)).toEqual(['test/fail.js > equal > objects', 'test/fail.js > equal > throws plain', 'test/sub/deep.js > same name']);
    const plan = planTestCommand('npm test', JSON.stringify({ scripts: { test: 'uvu -r esm test' } }));
    expect(wholeCommandPlan(plan).script).toContain("echo '# dockhand-uvu-dir: test'; uvu -r esm test");
  });

  it('a green run counts its passes and skips', () => {
    const run = parseTestOutput('uvu', data('uvu-0.5.6-pass.txt'), files);
    expect([count(run.cases, 'passed'), count(run.cases, 'failed'), count(run.cases, 'skipped')]).toEqual([5, 0, 1]);
    expect(run.failures).toEqual([]);
  });

  it('a file that throws while loading gives no report: infrastructure, not a red test', () => {
    const output = data('uvu-0.5.6-load-error.txt');
    const run = parseTestOutput('uvu', output, files);
    expect(run).toMatchObject({ cases: [], reported: false });
    expect(classifyRun({ runner: 'uvu', command: 'npm test', result: exec({ exitCode: 1, stdout: '', stderr: output }), parsed: run, changedFiles: [], timeoutSeconds: 600 })).toBeDefined();
  });
});

describe('a reproducing test named by its name, once green under uvu', () => {
  // The baseline as the engine keeps it: failures, their files, every id of the first run.
  const base = parseTestOutput('uvu', `# dockhand-uvu-dir: test\n${data('uvu-0.5.6-fail.txt')}`, files).cases;
  const baseline = {
    preExistingFailures: base.filter((testCase) => testCase.outcome === 'failed').map((testCase) => testCase.id),
    failureFiles: Object.fromEntries(base.flatMap((testCase) => (testCase.outcome === 'failed' && testCase.file ? [[testCase.id, testCase.file]] : []))),
    testIds: base.map((testCase) => testCase.id),
  };
  const run = (name: string) => parseTestOutput('uvu', `# dockhand-uvu-dir: test\n${data(name)}`, files).cases;
  const queries = ['objects', 'equal > objects', 'test/fail.js > equal > objects', 'same name', 'throws plain'];

  it('passes when its suite ran as many tests as at the base and did not name it among its failures', () => {
    expect(reproducingOutcomes(queries, run('uvu-0.5.6-fixed.txt'), baseline)).toEqual([
      { id: 'objects', outcome: 'passed' },
      { id: 'equal > objects', outcome: 'passed' },
      { id: 'test/fail.js > equal > objects', outcome: 'passed' },
      { id: 'same name', outcome: 'passed' },
      { id: 'throws plain', outcome: 'failed' },
    ]);
    // uvu prints a dot for a passing test: without the baseline nothing names it.
    expect(reproducingOutcomes(['objects'], run('uvu-0.5.6-fixed.txt'))).toEqual([{ id: 'objects', outcome: 'not_run' }]);
  });

  it('did not run when it was turned into a skip, its file was not run, or it still fails', () => {
    expect(reproducingOutcomes(['objects'], run('uvu-0.5.6-skipped.txt'), baseline)).toEqual([{ id: 'objects', outcome: 'not_run' }]);
    // A selection of other files (math.js and only.js).
    expect(reproducingOutcomes(['objects', 'same name'], run('uvu-0.5.6-pass.txt'), baseline)).toEqual([
      { id: 'objects', outcome: 'not_run' },
      { id: 'same name', outcome: 'not_run' },
    ]);
    expect(reproducingOutcomes(['objects'], run('uvu-0.5.6-fail.txt'), baseline)).toEqual([{ id: 'objects', outcome: 'failed' }]);
  });
});

describe('uvu commands', () => {
  const pkg = (test: string, devDependencies: Record<string, string> = {}) => JSON.stringify({ name: 'dequal', scripts: { test }, devDependencies });
  it('is detected from the script and the devDependencies', () => {
    expect(planTestCommand('npm test', pkg('uvu -r esm test')).runner).toBe('uvu');
    expect(detectJsRunner(pkg('uvu -r esm test'))).toBe('uvu');
    expect(detectJsRunner(pkg('node run-tests.js', { uvu: '0.5.6' }))).toBe('uvu');
  });

  it('keeps -r esm as a flag and the directory as the path; a selection is the directory and a pattern of the files', () => {
    const plan = planTestCommand('npm test', pkg('uvu -r esm test'));
    expect(plan.invocation?.flags.map((word) => word.value)).toEqual(['-r', 'esm']);
    expect(plan.invocation?.paths.map((word) => word.value)).toEqual(['test']);
    expect(wholeCommandPlan(plan).command).toBe('npm test → uvu -r esm test');
    expect(selectableFiles(plan, ['test/sub/deep.js', 'src/index.js'])).toEqual({ files: ['test/sub/deep.js'] });
    expect(selectedPlan(plan, [{ file: 'test/sub/deep.js' }, { file: 'test/only.js' }]).command).toBe("uvu -r esm test '^(?:sub/deep\\.js|only\\.js)$'");
    expect(uvuArguments(undefined, ['test/a.js'])).toBe(". '^(?:test/a\\.js)$'");
  });
});

function exec(overrides: Partial<ExecResult>): ExecResult {
  return { exitCode: 0, stdout: '', stderr: '', truncated: false, timedOut: false, durationMs: 10, ...overrides };
}
