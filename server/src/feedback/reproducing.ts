import type { BaselineResult, ReproducingOutcome, ReproducingSelection, TestCaseResult } from './types';

/*
 * The ticket's reproducing tests: tests that fail at the base commit and that this ticket is
 * about, so they must pass before the task may finish. Pre-existing failures never block a
 * correct fix (they are usually unrelated), but a ticket "fix X; test/foo.js 'parses negative
 * numbers' fails" names its own red test, and with the pre-existing rule alone a whitespace diff
 * would finish. Two sources:
 *
 * - explicit: the task's `reproducingTests` (API field, `submit --test`), each a test id, a test
 *   name, or a test file path;
 * - the ticket's text: a baseline failure whose file path or name the title or body mentions.
 *
 * Matching (`matchesTest`), case-insensitive: the whole id; a run of consecutive segments of the
 * id (segments split at ` > ` and `::`, so `nums` is every assertion of tape's test `nums` and
 * `test_parse` pytest's `tests/test_x.py::test_parse`); or a file path, by path suffix on whole
 * segments (`foo.test.js` and `test/foo.test.js` both name `pkg/test/foo.test.js`). From the
 * ticket's text a name counts only when it is quoted (`'…'`, `"…"`, backticks) or is at least 12
 * characters with a space in it, and never a runner's default assertion message ("should be
 * equal"): a ticket that says "works" does not make every failing "works" test the ticket's.
 */

const DEFAULT_ASSERTION = /^(should (not )?(be|have|throw|equal|match)\b.*|expected .*|\(unnamed assertion\)|ok|equal|deep ?equal)$/i;
const PATH_IN_TEXT = /(?:^|[\s'"`(<[])((?:[\w@.-]+\/)*[\w@.-]+\.(?:[cm]?[jt]sx?|py))(?=$|[\s'"`)>\],.;:!?])/g;
const QUOTED = /'([^'\n]{2,200})'|"([^"\n]{2,200})"|`([^`\n]{2,200})`|“([^”\n]{2,200})”/g;

/** A test id's segments: ` > ` (jest, vitest, mocha, tape, node --test) and `::` (pytest). */
function segments(id: string): string[] {
  return id
    .replace(/ \(\d+\)$/, '')
    .split(/ > |::/)
    .map((part) => part.trim().toLowerCase())
    .filter(Boolean);
}

function isPathLike(query: string): boolean {
  return !/ > |::/.test(query) && /(^|\/)[\w@.-]+\.(?:[cm]?[jt]sx?|py)$|\//.test(query.trim());
}

/** The test file a query names (`test/foo.js`, `tests/test_x.py::test_y`), or undefined for a test name. */
export function testFileOf(query: string): string | undefined {
  const file = query.trim().split('::')[0] ?? '';
  return / > /.test(query) || !isPathLike(file) ? undefined : file;
}

/** Does `path` end with `suffix` on whole path segments? */
export function pathEndsWith(path: string, suffix: string): boolean {
  const a = path.toLowerCase().replace(/^\.\//, '');
  const b = suffix.toLowerCase().replace(/^\.\//, '');
  return a === b || a.endsWith(`/${b}`);
}

/** Is `part` a run of consecutive items of `whole`? */
function containsRun(whole: string[], part: string[]): boolean {
  if (part.length === 0 || part.length > whole.length) return false;
  for (let start = 0; start + part.length <= whole.length; start++) {
    if (part.every((item, index) => whole[start + index] === item)) return true;
  }
  return false;
}

/** Does a query (test id, name or file path) name this test? */
export function matchesTest(query: string, id: string, file?: string): boolean {
  const wanted = query.trim();
  if (!wanted) return false;
  if (wanted.toLowerCase() === id.toLowerCase()) return true;
  if (isPathLike(wanted)) {
    const filePart = wanted.split('::')[0] ?? wanted;
    const idFile = id.split(/ > |::/)[0] ?? '';
    return (file !== undefined && pathEndsWith(file, filePart)) || pathEndsWith(idFile, filePart);
  }
  const parts = segments(wanted);
  const first = parts[0] ?? '';
  // `file > name`: node --test names the file only for failures, so a passing case may be `name` alone.
  if (parts.length > 1 && isPathLike(first)) {
    const caseParts = segments(id);
    const caseFile = file ?? (isPathLike(caseParts[0] ?? '') ? caseParts[0] : undefined);
    if (caseFile !== undefined && !pathEndsWith(caseFile, first)) return false;
    const rest = caseParts[0] !== undefined && caseFile !== undefined && pathEndsWith(caseParts[0], first) ? caseParts.slice(1) : caseParts;
    return containsRun(rest, parts.slice(1));
  }
  return containsRun(segments(id), parts);
}

/** The names a ticket's text may use for a failing test (quoted, or long and several words). */
function mentionedNames(text: string): { quoted: Set<string>; plain: string } {
  const quoted = new Set<string>();
  for (const match of text.matchAll(QUOTED)) {
    const value = (match[1] ?? match[2] ?? match[3] ?? match[4] ?? '').trim().toLowerCase();
    if (value) quoted.add(value);
  }
  return { quoted, plain: ` ${text.toLowerCase().replace(/\s+/g, ' ')} ` };
}

function ticketNames(id: string, file: string | undefined, text: string): boolean {
  const paths = [...text.matchAll(PATH_IN_TEXT)].map((match) => match[1] ?? '').filter(Boolean);
  if (paths.some((path) => matchesTest(path, id, file))) return true;
  const { quoted, plain } = mentionedNames(text);
  const parts = segments(id);
  // Every run of segments is a name the ticket may use: `parses negative numbers`, `nums > parses …`.
  for (let start = 0; start < parts.length; start++) {
    for (let end = start + 1; end <= parts.length; end++) {
      const name = parts.slice(start, end).join(' > ');
      if (end - start === 1 && DEFAULT_ASSERTION.test(name)) continue;
      if (quoted.has(name)) return true;
      if (name.length >= 12 && name.includes(' ') && plain.includes(name)) return true;
    }
  }
  return false;
}

/**
 * The reproducing tests of a task from the baseline at its base commit: the explicit ones, and
 * the pre-existing failures its ticket names. Without a baseline only the explicit ones.
 */
export function selectReproducingTests(input: {
  ticket: { title: string; body?: string };
  explicit?: readonly string[];
  baseline?: Pick<BaselineResult, 'preExistingFailures' | 'failureFiles' | 'testIds' | 'testFiles'>;
}): ReproducingSelection {
  const from: Record<string, 'explicit' | 'ticket'> = {};
  const unknown: string[] = [];
  const explicit = [...new Set((input.explicit ?? []).map((test) => test.trim()).filter(Boolean))];
  for (const query of explicit) from[query] = 'explicit';
  const baseline = input.baseline;
  if (baseline) {
    const failures = baseline.preExistingFailures.map((id) => ({ id, file: baseline.failureFiles?.[id] }));
    for (const query of explicit) {
      const known =
        failures.some((failure) => matchesTest(query, failure.id, failure.file)) ||
        (baseline.testIds ?? []).some((id) => matchesTest(query, id)) ||
        (isPathLike(query) && (baseline.testFiles ?? []).some((file) => pathEndsWith(file, query.split('::')[0] ?? query)));
      // Without the suite's ids (an older stored baseline) nothing can be called unknown.
      if (!known && baseline.testIds !== undefined) unknown.push(query);
    }
    const text = `${input.ticket.title}\n${input.ticket.body ?? ''}`;
    for (const failure of failures) {
      if (explicit.some((query) => matchesTest(query, failure.id, failure.file))) continue;
      if (ticketNames(failure.id, failure.file, text)) from[failure.id] ??= 'ticket';
    }
  }
  return { tests: Object.keys(from), from, unknown };
}

/** A passing case a runner could not name: uvu prints a dot per passing test (uvu.ts), so its id is `file > suite > (passing 2)`. */
const POSITIONAL_PASS = / > \(passing \d+\)$/;

/** The cases of `cases` directly under `prefix` (`file > suite`), skipped ones left out. */
function under(prefix: string, ids: readonly string[]): string[] {
  return ids.filter((id) => id.startsWith(`${prefix} > `) && !id.slice(prefix.length + 3).includes(' > '));
}

/**
 * Did the baseline failure `failureId` (`file > suite > name`) pass in a run whose passing cases
 * are positional? Only a runner that names every failure of a suite it ran does that (uvu), so
 * the test passed when its suite ran, did not name it among its failures, and ran at least as many
 * tests as at the base (a test that was removed or turned into `test.skip` lowers the count).
 */
function passedUnnamed(failureId: string, cases: readonly TestCaseResult[], baselineIds: readonly string[]): boolean {
  const cut = failureId.lastIndexOf(' > ');
  if (cut <= 0) return false;
  const prefix = failureId.slice(0, cut);
  const ran = cases.filter((testCase) => testCase.outcome !== 'skipped');
  const suite = under(prefix, ran.map((testCase) => testCase.id));
  if (!suite.some((id) => POSITIONAL_PASS.test(id))) return false;
  if (ran.some((testCase) => testCase.id === failureId)) return false;
  return suite.length >= under(prefix, baselineIds).length;
}

/**
 * Each reproducing test's outcome in one run: failed when any case it names failed, passed when
 * some ran and all passed, not_run when none ran (a selection without it, or a pre-PR command
 * that does not run tests).
 *
 * With the baseline, a test the run cannot name because its runner names passing tests by
 * position only (uvu) is passed when every baseline failure it names passed unnamed
 * (`passedUnnamed`): uvu names each failing test of a suite it ran, so a suite that ran as many
 * tests as at the base without naming it ran it green.
 */
export function reproducingOutcomes(
  tests: readonly string[],
  cases: readonly TestCaseResult[],
  baseline?: Pick<BaselineResult, 'preExistingFailures' | 'failureFiles' | 'testIds'>,
): ReproducingOutcome[] {
  return tests.map((test) => {
    const named = cases.filter((testCase) => testCase.outcome !== 'skipped' && matchesTest(test, testCase.id, testCase.file));
    if (named.length > 0) return { id: test, outcome: named.some((testCase) => testCase.outcome === 'failed') ? 'failed' : 'passed' };
    const failures = (baseline?.preExistingFailures ?? []).filter((id) => matchesTest(test, id, baseline?.failureFiles?.[id]));
    const passed = baseline?.testIds !== undefined && failures.length > 0 && failures.every((id) => passedUnnamed(id, cases, baseline.testIds ?? []));
    return { id: test, outcome: passed ? 'passed' : 'not_run' };
  });
}
