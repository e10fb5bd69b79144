import { parseTap, toRepoPath, type ParsedRun } from './runners';

/*
 * node-tap (`tap`, 16 and the @tapjs 18+): `--reporter=tap` prints nested TAP like node --test's,
 * one top-level subtest per file named by its path (`# Subtest: test/fail.js`), the file's
 * subtests indented under it. Each leaf point is one case, named `file > parent > child > point`;
 * a parent's own point (`not ok 2 - negative`) only sums its children and is not counted. A file
 * that dies before any subtest is a leaf: one failing case named by the file.
 *
 * Coverage: tap 16 and 18 check coverage after the tests and exit 1 below 100% by default, with
 * every test point `ok` (16 prints `ERROR: Coverage for … does not meet global threshold` on
 * stderr, 18 with the TAP reporter prints nothing). A selection or a rerun covers part of the
 * code, so it runs with coverage off; the whole command keeps the repository's own check, and a
 * red exit with no failing point is the command's failure (suite-run.ts), never a test's.
 */

/**
 * The flag that turns coverage off, by the version the repository installed: tap 18+ rejects
 * `--no-coverage` and tap ≤ 16 rejects `--disable-coverage` (both refuse unknown options).
 * `head` is the step's words up to `tap`; the shell asks it for `--version` once.
 */
export function tapCoverageOff(head: string): string {
  return `"$(case "$(${head} --version 2>/dev/null)" in 1[0-7].*|[0-9].*) echo --no-coverage;; *) echo --disable-coverage;; esac)"`;
}

/** Reads node-tap's TAP: node --test's nested reader, then the top-level subtest mapped to its file. */
export function parseNodeTap(stdout: string, files: Set<string>, cwd?: string): ParsedRun {
  // Read without the repository's files so the file's own subtest stays the id's first segment.
  const parsed = parseTap(stdout, new Set(), cwd);
  const renamed = new Map<string, string>();
  const cases = parsed.cases.map((testCase) => {
    const [first = '', ...rest] = testCase.id.split(' > ');
    const file = toRepoPath(first, files, cwd);
    if (!files.has(file)) return testCase;
    const id = [file, ...rest].join(' > ');
    renamed.set(testCase.id, id);
    return { ...testCase, id, file };
  });
  const failures = parsed.failures.map((failure) => {
    const end = failure.indexOf('\n');
    const old = failure.slice(2, end >= 0 ? end : undefined);
    const id = renamed.get(old) ?? old;
    // node's reader takes the first YAML line as the message; node-tap's first is `at:`.
    const detail = end >= 0 ? failure.slice(end + 1) : '';
    const testCase = cases.find((candidate) => candidate.id === id);
    if (testCase) testCase.message = assertionMessage(detail, id);
    return `✗ ${id}${end >= 0 ? failure.slice(end) : ''}`;
  });
  return { ...parsed, cases, failures };
}

/** `found` / `wanted` when the assertion compared values, else the assertion's own name. */
function assertionMessage(yaml: string, id: string): string {
  const values = yaml
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => /^(found|wanted|message|error):/.test(line));
  return (values.length > 0 ? values.join('; ') : (id.split(' > ').pop() ?? id)).slice(0, 300);
}
