import { describe, expect, it } from 'vitest';
import { matchesTest, reproducingOutcomes, selectReproducingTests, testFileOf } from './reproducing';

describe('matchesTest', () => {
  it('matches a whole id, a run of its segments, or its file by path suffix, case-insensitively', () => {
    const id = 'test/parse.test.js > numbers > parses negative numbers';
    expect(matchesTest(id, id)).toBe(true);
    expect(matchesTest('Parses Negative Numbers', id)).toBe(true);
    expect(matchesTest('numbers > parses negative numbers', id)).toBe(true);
    expect(matchesTest('parse.test.js', id, 'test/parse.test.js')).toBe(true);
    expect(matchesTest('test/parse.test.js', id)).toBe(true);
    expect(matchesTest('negative numbers', id)).toBe(false);
    expect(matchesTest('st/parse.test.js', id, 'test/parse.test.js')).toBe(false);
    expect(matchesTest('other.test.js', id, 'test/parse.test.js')).toBe(false);
    // node --test names the file only for failures: the passing case is the name alone.
    expect(matchesTest('test/parse.test.js > parses negative numbers', 'numbers > parses negative numbers')).toBe(true);
    expect(matchesTest('test/parse.test.js > parses negative numbers', 'parses negative numbers', 'test/other.test.js')).toBe(false);
  });

  it('reads pytest ids and tape assertion ids', () => {
    expect(matchesTest('test_density', 'tests/test_graph.py::TestGraph::test_density')).toBe(true);
    expect(matchesTest('tests/test_graph.py', 'tests/test_graph.py::TestGraph::test_density')).toBe(true);
    expect(matchesTest('nums', 'nums > should be deeply equivalent (2)')).toBe(true);
    expect(testFileOf('tests/test_graph.py::test_density')).toBe('tests/test_graph.py');
    expect(testFileOf('parses negative numbers')).toBeUndefined();
    expect(testFileOf('test/a.js > works')).toBeUndefined();
  });
});

describe('selectReproducingTests', () => {
  const baseline = {
    preExistingFailures: ['nums > should be deeply equivalent', 'legacy > float sum is exact', 'test/parse.test.js > parses negative numbers', 'works'],
    failureFiles: { 'nums > should be deeply equivalent': 'test/num.js', 'legacy > float sum is exact': 'test/legacy.js' },
    testIds: ['nums > should be deeply equivalent', 'nums > ok', 'legacy > float sum is exact', 'test/parse.test.js > parses negative numbers', 'works', 'dash > handles --'],
    testFiles: ['test/num.js', 'test/legacy.js', 'test/parse.test.js', 'test/dash.js'],
  };

  it('takes the baseline failures the ticket names by file or by name, not unrelated ones', () => {
    const byFile = selectReproducingTests({ ticket: { title: 'Hex numbers stay strings', body: 'See test/num.js: it fails.' }, baseline });
    expect(byFile.tests).toEqual(['nums > should be deeply equivalent']);
    expect(byFile.from).toEqual({ 'nums > should be deeply equivalent': 'ticket' });
    const byName = selectReproducingTests({ ticket: { title: 'fix negatives', body: 'parses negative numbers fails since 2.0' }, baseline });
    expect(byName.tests).toEqual(['test/parse.test.js > parses negative numbers']);
    const quoted = selectReproducingTests({ ticket: { title: "'legacy' is red", body: '' }, baseline });
    expect(quoted.tests).toEqual(['legacy > float sum is exact']);
  });

  it('does not take a short unquoted word or a default assertion message from the ticket', () => {
    const none = selectReproducingTests({ ticket: { title: 'it works with nums', body: 'the result should be deeply equivalent to the input' }, baseline });
    expect(none.tests).toEqual([]);
  });

  it('keeps explicit tests as given, and says which ones the suite at the base does not have', () => {
    const selected = selectReproducingTests({ ticket: { title: 'x', body: '' }, explicit: ['handles --', 'test/num.js', 'no such test', ' '], baseline });
    expect(selected.tests).toEqual(['handles --', 'test/num.js', 'no such test']);
    expect(selected.unknown).toEqual(['no such test']);
    expect(selectReproducingTests({ ticket: { title: 'x' }, explicit: ['anything'] })).toEqual({ tests: ['anything'], from: { anything: 'explicit' }, unknown: [] });
  });
});

describe('reproducingOutcomes', () => {
  it('is failed when any named case failed, passed when all that ran passed, not_run otherwise', () => {
    const cases = [
      { id: 'nums > a', outcome: 'passed' as const },
      { id: 'nums > b', outcome: 'failed' as const },
      { id: 'dash > c', outcome: 'passed' as const },
      { id: 'skip > d', outcome: 'skipped' as const },
    ];
    expect(reproducingOutcomes(['nums', 'dash', 'skip', 'gone'], cases)).toEqual([
      { id: 'nums', outcome: 'failed' },
      { id: 'dash', outcome: 'passed' },
      { id: 'skip', outcome: 'not_run' },
      { id: 'gone', outcome: 'not_run' },
    ]);
  });
});
