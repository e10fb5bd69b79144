import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ExecResult } from '../sandbox/types';
import { classifyRun } from './infrastructure';
import { parseTestOutput, RESULT_MARKER } from './runners';

/*
 * Real runner output: testdata/ was written by tape 5.10, ava 7.0, mocha 12.0, jest 30.5 and vitest 4.1
 * (installed from the npm registry into a scratch directory) on a fixture with passing, failing
 * and skipped tests, paths rewritten to /workspace. A test is a test: tape counts assertions.
 */

const data = (name: string) => readFileSync(join(import.meta.dirname, 'testdata', name), 'utf8');
const files = new Set(['test/a.test.js', 'test/b.test.js', 'test/broken.test.js', 'test/a.spec.js']);
const counts = (cases: Array<{ outcome: string }>) => ({
  passed: cases.filter((c) => c.outcome === 'passed').length,
  failed: cases.filter((c) => c.outcome === 'failed').length,
  skipped: cases.filter((c) => c.outcome === 'skipped').length,
});

describe('runner reports', () => {
  it('tape: one case per assertion, named by its test, the failure with its file', () => {
    const run = parseTestOutput('tape', data('tape.tap'), files);
    expect(run.reported).toBe(true);
    expect(counts(run.cases)).toEqual({ passed: 5, failed: 1, skipped: 1 });
    expect(run.cases.map((c) => c.id)).toEqual([
      'adds > should be strictly equal',
      'adds > two and two',
      'subtracts > three minus one',
      'subtracts > should be truthy',
      'later',
      'b works > should be truthy',
      'b works > again',
    ]);
    expect(run.cases[2]).toMatchObject({ outcome: 'failed', file: 'test/a.test.js' });
    expect(run.failures[0]).toContain('expected: 1');
  });

  it('ava --tap: file › title per test', () => {
    const run = parseTestOutput('ava', data('ava.tap'), files);
    expect(counts(run.cases)).toEqual({ passed: 2, failed: 1, skipped: 1 });
    expect(run.cases.find((c) => c.outcome === 'failed')).toMatchObject({ id: 'a › subtracts', message: 'three minus one' });
  });

  it('jest and vitest JSON, mocha JSON: per test, a suite that failed to load is a failure of its file', () => {
    const jest = parseTestOutput('jest', `noise\n${RESULT_MARKER}\n${data('jest.json')}`, files);
    expect(counts(jest.cases)).toEqual({ passed: 1, failed: 2, skipped: 1 });
    expect(jest.cases.map((c) => c.id)).toContain('test/broken.test.js');
    const vitest = parseTestOutput('vitest', `${RESULT_MARKER}\n${data('vitest.json')}`, files);
    expect(counts(vitest.cases)).toEqual({ passed: 1, failed: 1, skipped: 1 });
    const mocha = parseTestOutput('mocha', `${RESULT_MARKER}\n${data('mocha.json')}`, new Set(['test/a.spec.js']));
    expect(mocha.cases.map((c) => [c.id, c.outcome])).toEqual([
      ['test/a.spec.js > math adds', 'passed'],
      ['test/a.spec.js > math subtracts', 'failed'],
      ['test/a.spec.js > math later', 'skipped'],
    ]);
  });
});

const exec = (overrides: Partial<ExecResult>): ExecResult => ({ exitCode: 0, stdout: '', stderr: '', truncated: false, timedOut: false, durationMs: 10, ...overrides });
const classify = (runner: Parameters<typeof classifyRun>[0]['runner'], result: Partial<ExecResult>, changedFiles: string[] = []) => {
  const full = exec(result);
  const parsed = runner === 'unknown' || runner === 'custom' ? { cases: [], failures: [] } : parseTestOutput(runner, full.stdout, files);
  return classifyRun({ runner, command: 'npm test', result: full, parsed, changedFiles, timeoutSeconds: 600 });
};

describe('infrastructure or code', () => {
  it('a missing runner, a missing script and a missing pytest are infrastructure (missing)', () => {
    expect(classify('tape', { exitCode: 127, stderr: 'sh: 1: tape: not found' })).toMatchObject({ kind: 'missing', message: expect.stringMatching(/^the test runner could not start: `npm test`: sh: 1: tape: not found/) });
    expect(classify('jest', { exitCode: 1, stderr: "Error: Cannot find module '/workspace/node_modules/jest/bin/jest.js'" })?.kind).toBe('missing');
    expect(classify('unknown', { exitCode: 1, stderr: 'npm error Missing script: "test"' })?.kind).toBe('missing');
    expect(classify('pytest', { exitCode: 1, stderr: '/usr/bin/python3: No module named pytest' })?.kind).toBe('missing');
  });

  it('a crash, a timeout and a silent exit are infrastructure; a report is never', () => {
    expect(classify('vitest', { exitCode: 1, stderr: 'RangeError: WebAssembly.instantiate(): Out of memory: Cannot allocate Wasm memory for new instance' })).toMatchObject({ kind: 'crash' });
    expect(classify('mocha', { exitCode: 137 })).toMatchObject({ kind: 'crash', message: expect.stringContaining('SIGKILL') });
    expect(classify('jest', { exitCode: 1, timedOut: true })?.kind).toBe('timeout');
    expect(classify('tape', { exitCode: 0, stdout: 'hello' })?.kind).toBe('no_report');
    expect(classify('tape', { exitCode: 1, stdout: data('tape.tap') })).toBeUndefined();
    expect(classify('unknown', { exitCode: 1, stdout: '2 failing' })).toBeUndefined();
  });

  it('a runner that dies loading a file the change touched is the change (a syntax error it introduced)', () => {
    const stderr = '/workspace/test/a.test.js:3\n  t.equal(1 +, 2);\n           ^\nSyntaxError: Unexpected token \',\'';
    expect(classify('tape', { exitCode: 1, stderr }, ['test/a.test.js'])).toBeUndefined();
    expect(classify('tape', { exitCode: 1, stderr }, [])).toMatchObject({ kind: 'start' });
    // A module the test itself requires is not the runner: without a changed file it is the environment's.
    expect(classify('tape', { exitCode: 1, stderr: "Error: Cannot find module 'lodash'" }, [])).toMatchObject({ kind: 'start' });
    expect(classify('tape', { exitCode: 1, stderr: "Error: Cannot find module 'lodash'\n    at /workspace/src/a.js:1:1" }, ['src/a.js'])).toBeUndefined();
  });
});
