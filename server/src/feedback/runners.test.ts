import { describe, expect, it } from 'vitest';
import { detectJsRunner, parseJestJson, parseMochaJson, parsePytest, parseTap, RESULT_MARKER, testCommand } from './runners';

const TAP = `TAP version 13
# Subtest: add sums two numbers
not ok 1 - add sums two numbers
  ---
  duration_ms: 3.28
  location: '/workspace/test/math.test.js:5:1'
  failureType: 'testCodeFailure'
  error: |-
    Expected values to be strictly equal:

    -1 !== 5

  code: 'ERR_ASSERTION'
  stack: |-
    TestContext.<anonymous> (file:///workspace/test/math.test.js:6:10)
  ...
# Subtest: multiply multiplies
ok 2 - multiply multiplies
  ---
  duration_ms: 0.28
  location: '/workspace/test/math.test.js:9:1'
  ...
# Subtest: outer
    # Subtest: inner fails
    not ok 1 - inner fails
      ---
      duration_ms: 2.94
      location: 'file:///workspace/test/suite.test.js:3:27'
      failureType: 'testCodeFailure'
      error: 'boom'
      ...
    # Subtest: inner skip
    ok 2 - inner skip # SKIP
      ---
      duration_ms: 0.21
      ...
    1..2
not ok 3 - outer
  ---
  duration_ms: 5.08
  type: 'suite'
  location: '/workspace/test/suite.test.js:3:1'
  failureType: 'subtestsFailed'
  error: '1 subtest failed'
  ...
1..3
# tests 4
`;

describe('parseTap', () => {
  it('reports leaf tests with repo-relative files, nesting and failure text', () => {
    const files = new Set(['test/math.test.js', 'test/suite.test.js']);
    const { cases, failures } = parseTap(TAP, files);
    expect(cases.map((c) => [c.id, c.outcome])).toEqual([
      ['test/math.test.js > add sums two numbers', 'failed'],
      ['test/math.test.js > multiply multiplies', 'passed'],
      ['test/suite.test.js > outer > inner fails', 'failed'],
      ['test/suite.test.js > outer > inner skip', 'skipped'],
    ]);
    expect(cases[0]?.file).toBe('test/math.test.js');
    expect(failures[0]).toContain('-1 !== 5');
  });
});

describe('parseTap with the per-file loop', () => {
  it('names the file of passing tests, which node reports without a location', () => {
    const out = '# dockhand-file: test/a.test.js\nTAP version 13\n# Subtest: works\nok 1 - works\n  ---\n  duration_ms: 1\n  ...\n1..1\n';
    expect(parseTap(out, new Set(['test/a.test.js'])).cases).toEqual([{ id: 'test/a.test.js > works', file: 'test/a.test.js', outcome: 'passed' }]);
  });
});

describe('parsePytest', () => {
  it('reads -rA summary lines and the FAILURES section', () => {
    const out = `..F
=================================== FAILURES ===================================
________________________________ test_discount _________________________________
tests/test_pricing.py:9: in test_discount
    assert shop.discount(50, 10) == 45.0
E   assert 55.0 == 45.0
=========================== short test summary info ============================
PASSED tests/test_pricing.py::test_price_with_tax
PASSED tests/test_report.py::test_summary
FAILED tests/test_pricing.py::test_discount - assert 55.0 == 45.0
SKIPPED [1] tests/test_x.py:4: needs numpy
ERROR tests/test_broken.py - ImportError: no module named nope
1 failed, 2 passed, 1 skipped, 1 error in 0.12s
`;
    const { cases, failures } = parsePytest(out);
    expect(cases.map((c) => [c.id, c.outcome])).toEqual([
      ['tests/test_pricing.py::test_price_with_tax', 'passed'],
      ['tests/test_report.py::test_summary', 'passed'],
      ['tests/test_pricing.py::test_discount', 'failed'],
      ['tests/test_x.py', 'skipped'],
      ['tests/test_broken.py', 'failed'],
    ]);
    expect(cases[2]?.message).toBe('assert 55.0 == 45.0');
    expect(failures[0]).toContain('E   assert 55.0 == 45.0');
  });
});

describe('JSON reporters', () => {
  const files = new Set(['src/a.test.ts']);
  it('parses the jest-compatible report of vitest and jest', () => {
    const report = JSON.stringify({
      testResults: [
        {
          name: '/workspace/src/a.test.ts',
          status: 'failed',
          assertionResults: [
            { title: 'works', fullName: 'a works', status: 'passed', failureMessages: [] },
            { title: 'breaks', fullName: 'a breaks', status: 'failed', failureMessages: ['AssertionError: expected 1 to be 2\n at x'] },
          ],
        },
      ],
    });
    const { cases, failures } = parseJestJson(`noise\n${RESULT_MARKER}\n${report}`.split(RESULT_MARKER)[1] ?? '', files);
    expect(cases.map((c) => [c.id, c.outcome])).toEqual([
      ['src/a.test.ts > a works', 'passed'],
      ['src/a.test.ts > a breaks', 'failed'],
    ]);
    expect(cases[1]?.message).toBe('AssertionError: expected 1 to be 2');
    expect(failures).toHaveLength(1);
  });

  it('parses mocha json', () => {
    const report = JSON.stringify({
      passes: [{ fullTitle: 'a works', file: '/w/src/a.test.ts' }],
      failures: [{ fullTitle: 'a breaks', file: '/w/src/a.test.ts', err: { message: 'nope' } }],
      pending: [],
    });
    expect(parseMochaJson(report, files).cases.map((c) => [c.id, c.outcome])).toEqual([
      ['src/a.test.ts > a works', 'passed'],
      ['src/a.test.ts > a breaks', 'failed'],
    ]);
  });
});

describe('testCommand and detectJsRunner', () => {
  it('builds per-runner commands for files and for reruns of named tests', () => {
    expect(testCommand('node-test', [{ file: 'test/a.test.js' }])).toBe(
      'status=0; for file in test/a.test.js; do echo "# dockhand-file: $file"; node --test --test-reporter=tap "$file" || status=1; done; exit $status',
    );
    expect(testCommand('node-test', [{ file: 'test/a.test.js', names: ['adds (1+1)'] }])).toContain(
      "node --test --test-reporter=tap --test-name-pattern='^adds \\(1\\+1\\)$' \"$file\"",
    );
    expect(testCommand('node-test', undefined)).toBe('node --test --test-reporter=tap');
    expect(testCommand('pytest', [{ file: 'tests/test_a.py', names: ['tests/test_a.py::test_x'] }])).toBe(
      'python3 -m pytest -q -rA --tb=short -p no:cacheprovider tests/test_a.py::test_x',
    );
    expect(testCommand('pytest', undefined)).toBe('python3 -m pytest -q -rA --tb=short -p no:cacheprovider');
    expect(testCommand('vitest', [{ file: 'src/a.test.ts' }])).toContain('vitest run --reporter=json');
  });

  it('detects the runner from the test script, then dependencies', () => {
    expect(detectJsRunner(JSON.stringify({ scripts: { test: 'vitest run' } }))).toBe('vitest');
    expect(detectJsRunner(JSON.stringify({ scripts: { test: 'node --test' } }))).toBe('node-test');
    expect(detectJsRunner(JSON.stringify({ devDependencies: { jest: '^29' } }))).toBe('jest');
    expect(detectJsRunner(JSON.stringify({ scripts: { test: 'mocha' } }))).toBe('mocha');
    expect(detectJsRunner(undefined)).toBeUndefined();
  });
});
