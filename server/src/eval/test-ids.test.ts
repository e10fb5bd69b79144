import { describe, expect, it } from 'vitest';
import { wilson, mcnemarExact } from './stats';
import { matchingCases, outcomeOf } from './test-ids';

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
