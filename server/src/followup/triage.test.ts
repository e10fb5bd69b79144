import { describe, expect, it } from 'vitest';
import type { PullRequestCheck } from '../forge/checks';
import { failingTestsInLog, triageCheck } from './triage';

const HEAD = 'h'.repeat(40);
const BASE = 'b'.repeat(40);
let next = 1;
function check(fields: Partial<PullRequestCheck>): PullRequestCheck {
  return { id: next++, repo: 'app', sha: HEAD, name: 'ci/test', conclusion: 'failure', log: '', postedBy: 'ci', createdAt: '2026-12-04T00:00:00Z', ...fields };
}

const VITEST_RED = [' RUN  v4', ' FAIL  test/paginate.test.js > paginate > returns a full page', ' Test Files  1 failed (1)'].join('\n');

describe('triageCheck: why is this check red?', () => {
  it('caused: passes at the base, fails on the head; the failing tests are named', () => {
    const red = check({ log: VITEST_RED });
    const result = triageCheck({ check: red, headChecks: [red], baseChecks: [check({ sha: BASE, conclusion: 'success' })] });
    expect(result.triage).toBe('caused');
    expect(result.evidence).toContain('passes at the base commit bbbbbbbbbbbb');
    expect(result.failingTests).toEqual(['test/paginate.test.js > paginate > returns a full page']);
  });

  it('pre-existing: the same check fails at the base too', () => {
    const red = check({ log: VITEST_RED });
    const result = triageCheck({ check: red, headChecks: [red], baseChecks: [check({ sha: BASE, conclusion: 'failure' })] });
    expect(result).toMatchObject({ triage: 'pre_existing', evidence: expect.stringContaining('fails at the base commit') });
  });

  it('pre-existing: every failing test already fails in the base\'s baseline', () => {
    const red = check({ log: 'not ok 3 - greets loudly\n' });
    expect(triageCheck({ check: red, headChecks: [red], baseChecks: [], baselineFailures: ['greets loudly'] }).triage).toBe('pre_existing');
    expect(triageCheck({ check: red, headChecks: [red], baseChecks: [], baselineFailures: ['other'] }).triage).toBe('caused');
  });

  it('flaky: a re-run at the same commit passed', () => {
    const red = check({ log: VITEST_RED });
    const rerun = check({ conclusion: 'success' });
    expect(triageCheck({ check: red, headChecks: [red, rerun], baseChecks: [] })).toMatchObject({ triage: 'flaky', evidence: expect.stringContaining(`runs ${red.id} and ${rerun.id}`) });
  });

  it('infrastructure: timed out, or the runner died before any test failed', () => {
    const timedOut = check({ conclusion: 'timed_out', log: 'npm ci\n' });
    expect(triageCheck({ check: timedOut, headChecks: [timedOut], baseChecks: [] }).triage).toBe('infrastructure');
    const lost = check({ log: 'Installing…\nThe runner has received a shutdown signal.\n' });
    expect(triageCheck({ check: lost, headChecks: [lost], baseChecks: [] })).toMatchObject({ triage: 'infrastructure', evidence: expect.stringContaining('shutdown signal') });
    // A test that failed is not the runner's doing, whatever else the log says.
    const both = check({ log: `${VITEST_RED}\nError: ECONNRESET` });
    expect(triageCheck({ check: both, headChecks: [both], baseChecks: [] }).triage).toBe('caused');
  });

  it('reads failing test names from vitest, TAP, pytest and go logs', () => {
    const log = ['× src/a.test.ts > adds [12ms]', 'not ok 2 - subtracts # time=3ms', 'FAILED tests/test_x.py::test_y - AssertionError', '--- FAIL: TestZ (0.00s)', 'ok 1 - fine'].join('\n');
    expect(failingTestsInLog(log)).toEqual(['src/a.test.ts > adds', 'subtracts', 'tests/test_x.py::test_y', 'TestZ']);
  });

  it('maps a jest or vitest log\'s test lines to the repository\'s test ids (file > describe > test)', () => {
    const jest = ['FAIL src/sum.test.js (5.2 s)', '  sum', '    ✓ adds (3 ms)', '    ✕ subtracts (2 ms)', '', '  ● sum › subtracts', '', '    expect(received).toBe(expected)', 'FAIL src/broken.test.js', '  ● Test suite failed to run'].join('\n');
    expect(failingTestsInLog(jest)).toEqual(['src/sum.test.js > sum > subtracts', 'src/broken.test.js']);
    const vitest = [' ❯ test/paginate.test.js (3 tests | 1 failed) 12ms', '   × paginate > returns a full page 5ms', ' Test Files  1 failed (1)'].join('\n');
    expect(failingTestsInLog(vitest)).toEqual(['test/paginate.test.js > paginate > returns a full page']);
  });
});
