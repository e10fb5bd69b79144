import type { TestCaseResult } from '../feedback/types';

/*
 * SWE-bench names a test the way its runner prints it (pytest: `tests/test_x.py::test_name[param]`;
 * JavaScript sets: the test's title, sometimes with its file). The feedback engine's ids are
 * `file::name` for pytest and `file > suite > test` for the JavaScript runners. A SWE-bench id
 * matches the engine's cases that are the same id, or the same test without the file, or the
 * same title path written with other separators; several cases may match (a title used in two
 * files), and then all of them must pass.
 */

function normalise(id: string): string {
  return id
    .replace(/\s*(?:>|›|::| - )\s*/g, ' > ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** A test's id without the file in front (`test/a.test.js > add` → `add`; `tests/t.py::test_x` → `test_x`). */
export function leafOf(id: string, file?: string): { file?: string; leaf: string } {
  const normalised = normalise(id);
  if (file && normalised.startsWith(`${normalise(file)} > `)) return { file, leaf: normalised.slice(normalise(file).length + 3) };
  const split = /^([^\s>]+\.[A-Za-z0-9]+) > (.+)$/.exec(normalised);
  return split?.[1] && split[2] ? { file: split[1], leaf: split[2] } : { leaf: normalised };
}

/**
 * The cases a SWE-bench id stands for: the same id; else the same test once files are set aside
 * where one side does not name its file (node's TAP names the file of failing tests only, so a
 * test's id gains its file when it fails), or both name the same file.
 */
export function matchingCases(id: string, cases: readonly TestCaseResult[]): TestCaseResult[] {
  const exact = cases.filter((testCase) => testCase.id === id);
  if (exact.length > 0) return exact;
  const wanted = leafOf(id);
  return cases.filter((testCase) => {
    const have = leafOf(testCase.id, testCase.file);
    if (have.leaf !== wanted.leaf) return false;
    return !have.file || !wanted.file || have.file === wanted.file;
  });
}

export type TestOutcome = 'passed' | 'failed' | 'skipped' | 'missing';

/** One SWE-bench test's outcome in one run: passed only if every matching case passed. */
export function outcomeOf(id: string, cases: readonly TestCaseResult[]): TestOutcome {
  const matches = matchingCases(id, cases);
  if (matches.length === 0) return 'missing';
  if (matches.some((testCase) => testCase.outcome === 'failed')) return 'failed';
  if (matches.every((testCase) => testCase.outcome === 'skipped')) return 'skipped';
  return 'passed';
}
