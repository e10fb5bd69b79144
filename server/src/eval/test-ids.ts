import type { TestCaseResult } from '../feedback/types';

/*
 * SWE-bench names a test the way its runner prints it (pytest: `tests/test_x.py::test_name[param]`;
 * unittest: `test_name (tests.test_x.TestX)`, or `(tests.test_x.TestX.test_name)` as Python 3.11+
 * prints it; JavaScript sets: the test's title, sometimes with its file). The feedback engine's ids
 * are `file::Class::name` for pytest and for unittest (its side channel names a unittest method by
 * its file), and `file > suite > test` for the JavaScript runners. A SWE-bench id matches the
 * engine's cases that are the same id, or the same test without the file, or the same title path
 * written with other separators, or the same file seen from another directory (a workspace
 * member's runner names `test/x.test.ts`, the repository `packages/a/test/x.test.ts`); several
 * cases may match (a title used in two files), and then all of them must pass.
 */

function normalise(id: string): string {
  return id
    .replace(/\s*(?:>|›|::| - )\s*/g, ' > ')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * unittest's own way of naming a test, `test_x (pkg.module.Class)` (or `(pkg.module.Class.test_x)`),
 * as the engine names it: `pkg/module.py > Class > test_x`. Anything else is returned as it is.
 */
export function fromUnittestId(id: string): string {
  const match = /^(\w+) \(([\w.]+)\)$/.exec(id.trim());
  if (!match?.[1] || !match[2]) return id;
  const name = match[1];
  const dotted = match[2].endsWith(`.${name}`) ? match[2].slice(0, -name.length - 1) : match[2];
  const parts = dotted.split('.');
  if (parts.length < 2) return id;
  const className = parts.pop() ?? '';
  return `${parts.join('/')}.py > ${className} > ${name}`;
}

/** A test's id without the file in front (`test/a.test.js > add` → `add`; `tests/t.py::test_x` → `test_x`). */
export function leafOf(id: string, file?: string): { file?: string; leaf: string } {
  const normalised = normalise(fromUnittestId(id));
  if (file && normalised.startsWith(`${normalise(file)} > `)) return { file, leaf: normalised.slice(normalise(file).length + 3) };
  const split = /^([^\s>]+\.[A-Za-z0-9]+) > (.+)$/.exec(normalised);
  return split?.[1] && split[2] ? { file: split[1], leaf: split[2] } : { leaf: normalised };
}

/** The same file named from two directories: equal, or one ends with the other on a whole path segment. */
export function sameFile(one: string, other: string): boolean {
  const a = one.replace(/^\.\//, '');
  const b = other.replace(/^\.\//, '');
  return a === b || a.endsWith(`/${b}`) || b.endsWith(`/${a}`);
}

/**
 * The cases a SWE-bench id stands for: the same id; else the same test once files are set aside
 * where one side does not name its file (node's TAP names the file of failing tests only, so a
 * test's id gains its file when it fails), or both name the same file (`sameFile`).
 */
export function matchingCases(id: string, cases: readonly TestCaseResult[]): TestCaseResult[] {
  const exact = cases.filter((testCase) => testCase.id === id);
  if (exact.length > 0) return exact;
  const wanted = leafOf(id);
  return cases.filter((testCase) => {
    const have = leafOf(testCase.id, testCase.file);
    if (have.leaf !== wanted.leaf) return false;
    return !have.file || !wanted.file || sameFile(have.file, wanted.file);
  });
}

/**
 * One listed test in one run. `passed` includes an expected failure (pytest's xfail, unittest's
 * expectedFailure): the engine reports those as passed, as SWE-bench's `TestStatus.XFAIL` counts.
 */
export type TestOutcome = 'passed' | 'failed' | 'skipped' | 'missing';

/** One SWE-bench test's outcome in one run: passed only if every matching case passed. */
export function outcomeOf(id: string, cases: readonly TestCaseResult[]): TestOutcome {
  const matches = matchingCases(id, cases.filter((testCase) => testCase.kind === undefined));
  if (matches.length === 0) return 'missing';
  if (matches.some((testCase) => testCase.outcome === 'failed')) return 'failed';
  if (matches.every((testCase) => testCase.outcome === 'skipped')) return 'skipped';
  return 'passed';
}

/**
 * SWE-bench's grading rules (swebench/harness/grading.py, `get_eval_tests_report` in PASS_AND_FAIL
 * mode, with `test_passed`, `test_maintained` and `test_failed`): a FAIL_TO_PASS test succeeds only
 * when it PASSED (or XFAIL); a PASS_TO_PASS test is maintained when it PASSED, XFAIL or was SKIPPED;
 * a test not in the log (missing), FAILED or ERROR is a failure either way, and a skipped
 * FAIL_TO_PASS test is a failure (`test_failed` lists SKIPPED).
 */
export function succeeds(kind: 'FAIL_TO_PASS' | 'PASS_TO_PASS', outcome: TestOutcome): boolean {
  return outcome === 'passed' || (kind === 'PASS_TO_PASS' && outcome === 'skipped');
}
