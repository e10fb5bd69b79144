import { describe, expect, it } from 'vitest';
import { wilson, mcnemarExact } from './stats';
import { fromUnittestId, matchingCases, outcomeOf, succeeds } from './test-ids';

describe('SWE-bench test ids against the engine\'s cases', () => {
  const cases = [
    { id: 'add', outcome: 'passed' as const },
    { id: 'test/calc.test.js > average', file: 'test/calc.test.js', outcome: 'failed' as const },
    { id: 'tests/test_shop.py::test_total[2]', file: 'tests/test_shop.py', outcome: 'passed' as const },
  ];
  it('matches exactly, across a file named on one side only, and not across different files', () => {
    expect(outcomeOf('tests/test_shop.py::test_total[2]', cases)).toBe('passed');
    expect(outcomeOf('test/calc.test.js > add', cases)).toBe('passed');
    expect(outcomeOf('average', cases)).toBe('failed');
    expect(matchingCases('test/other.test.js > average', cases)).toEqual([]);
    expect(outcomeOf('subtract', cases)).toBe('missing');
  });

  it('matches a file seen from a workspace member and from the repository, never two different members', () => {
    const member = [{ id: 'test/x.test.ts > parses', file: 'test/x.test.ts', outcome: 'passed' as const }];
    expect(outcomeOf('packages/a/test/x.test.ts > parses', member)).toBe('passed');
    const root = [{ id: 'packages/a/test/x.test.ts > parses', file: 'packages/a/test/x.test.ts', outcome: 'passed' as const }];
    expect(outcomeOf('test/x.test.ts > parses', root)).toBe('passed');
    expect(outcomeOf('packages/b/test/x.test.ts > parses', root)).toBe('missing');
    expect(outcomeOf('st/x.test.ts > parses', root)).toBe('missing');
  });

  it("reads unittest's names (Python before and after 3.11) as the engine's file::Class::method", () => {
    expect(fromUnittestId('test_zero (tests.test_calc.TestOld)')).toBe('tests/test_calc.py > TestOld > test_zero');
    expect(fromUnittestId('test_zero (tests.test_calc.TestOld.test_zero)')).toBe('tests/test_calc.py > TestOld > test_zero');
    expect(fromUnittestId('tests/test_calc.py::test_zero')).toBe('tests/test_calc.py::test_zero');
    const found = [{ id: 'src/pkg/tests/test_calc.py::TestOld::test_zero', file: 'src/pkg/tests/test_calc.py', outcome: 'failed' as const }];
    expect(outcomeOf('test_zero (pkg.tests.test_calc.TestOld)', found)).toBe('failed');
  });

  it("a case that is not a test (a file that did not load, a step's red exit) is not a listed test", () => {
    expect(outcomeOf('tests/test_shop.py', [{ id: 'tests/test_shop.py', file: 'tests/test_shop.py', outcome: 'failed', kind: 'load_error' }])).toBe('missing');
  });

  it("SWE-bench's rules: skipped is maintained for PASS_TO_PASS and a failure for FAIL_TO_PASS; missing fails both", () => {
    expect([succeeds('FAIL_TO_PASS', 'passed'), succeeds('FAIL_TO_PASS', 'skipped'), succeeds('FAIL_TO_PASS', 'missing'), succeeds('FAIL_TO_PASS', 'failed')]).toEqual([true, false, false, false]);
    expect([succeeds('PASS_TO_PASS', 'passed'), succeeds('PASS_TO_PASS', 'skipped'), succeeds('PASS_TO_PASS', 'missing'), succeeds('PASS_TO_PASS', 'failed')]).toEqual([true, true, false, false]);
  });
});

describe('stats', () => {
  it('Wilson interval: within [0, 1] at the ends, narrower with more trials', () => {
    expect(wilson(0, 10).low).toBe(0);
    expect(wilson(10, 10).high).toBe(1);
    expect(wilson(10, 10).low).toBeCloseTo(0.722, 3);
    expect(wilson(50, 100).high - wilson(50, 100).low).toBeLessThan(wilson(5, 10).high - wilson(5, 10).low);
  });
  it('exact McNemar: no change is p = 1, 8 of 8 changes one way is significant', () => {
    expect(mcnemarExact(0, 0)).toBe(1);
    expect(mcnemarExact(8, 0)).toBeCloseTo(0.0078, 4);
  });
});
