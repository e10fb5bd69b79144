import type { TestCaseResult } from './types';

/*
 * Flat TAP as tape and ava write it. Each test point (`ok 3 should be equal`) is one test: a tape
 * test with 12 assertions counts 12, the way tape's own `# tests` total does. tape announces the
 * test an assertion belongs to in a `# name` comment; ava writes `ok 1 - file › title`. Failure
 * details come in the indented YAML block after a point; tape's `at:` names the file.
 *
 * ava's comments name no test: each point already carries its whole title, and ava writes a
 * comment for every hook that ran (`# function › beforeEach hook for try-catch-remove`, a titled
 * hook's own title) and `#   <line>` for each `t.log`. Taken as tape's test names they went in
 * front of the later points (census: 203 of 291 ids read `… beforeEach hook for … > function ›
 * try-catch-remove`, a different id from run to run). Output of unknown origin with ava's hook
 * comments in it is read as ava's.
 */

/**
 * ava's comment for a hook that finished, in the forms no tape test name takes: `file › before hook`,
 * `[file › ]beforeEach hook for <test>` (a bare `# before hook` could be tape's own test).
 */
const AVA_HOOK = /^(?:.+ › (?:before|after)(?:Each)?(?:\.always)? hook(?: for .*)?|(?:.+ › )?(?:before|after)Each(?:\.always)? hook for .+)$/;

export interface FlatTapRun {
  cases: TestCaseResult[];
  failures: string[];
  /** A plan line or at least one test point was seen: the runner did report. */
  reported: boolean;
}

/** Maps a printed path back to a repo-relative one (the runners module supplies it). */
type ToRepoPath = (printed: string) => string | undefined;

export function parseFlatTap(stdout: string, toRepoPath: ToRepoPath, options: { ava?: boolean } = {}): FlatTapRun {
  const lines = stdout.split('\n');
  const ava = options.ava ?? lines.some((line) => line.startsWith('# ') && AVA_HOOK.test(line.slice(2).trim()));
  const cases: TestCaseResult[] = [];
  const failures: string[] = [];
  const seen = new Map<string, number>();
  let reported = false;
  let test: string | undefined;
  let pending: { testCase: TestCaseResult; yaml: string[] } | undefined;
  let inYaml = false;
  const settle = (): void => {
    if (!pending) return;
    const { testCase, yaml } = pending;
    if (testCase.outcome === 'failed') {
      const at = yaml.map((line) => /(?:\(|file:\/\/|\s)(\/[^\s():]+):\d+:\d+\)?\s*$/.exec(line)?.[1]).find(Boolean);
      const file = at ? toRepoPath(at) : undefined;
      if (file && !file.includes('node_modules/')) testCase.file = file;
      const detail = yaml.filter((line) => !/^\s*stack:|^\s{6,}at /.test(line)).slice(0, 12).join('\n');
      const message = yaml.map((line) => /^\s*message:\s*(.+)$/.exec(line)?.[1]).find(Boolean);
      testCase.message = (message ?? detail.split('\n').find((line) => line.trim())?.trim() ?? '').slice(0, 300);
      failures.push(`✗ ${testCase.id}\n${detail}`);
    }
    cases.push(testCase);
    pending = undefined;
  };
  for (const line of lines) {
    const text = line.trim();
    if (inYaml) {
      if (text === '...') inYaml = false;
      else pending?.yaml.push(line);
      continue;
    }
    if (text === '---' && pending) {
      inYaml = true;
      continue;
    }
    if (/^1\.\.\d+/.test(text)) {
      reported = true;
      continue;
    }
    const point = /^(not ok|ok)\b\s*\d*\s*(?:-\s*)?(.*?)(?:\s+#\s*(SKIP|TODO)\b.*)?$/i.exec(text);
    if (point && line.startsWith(point[1] ?? '')) {
      settle();
      reported = true;
      const name = (point[2] ?? '').trim() || '(unnamed assertion)';
      const base = test ? `${test} > ${name}` : name;
      const count = (seen.get(base) ?? 0) + 1;
      seen.set(base, count);
      // The same assertion message twice in one test: numbered, so reruns match by id.
      const id = count > 1 ? `${base} (${count})` : base;
      const outcome = point[3] ? 'skipped' : point[1] === 'ok' ? 'passed' : 'failed';
      pending = { testCase: { id, outcome }, yaml: [] };
      continue;
    }
    const comment = ava ? null : /^# (.+)$/.exec(line);
    if (comment?.[1] && !/^(tests|pass|fail|skip|todo|ok|not ok)\b/.test(comment[1])) {
      settle();
      const skipped = /^SKIP (.+)$/.exec(comment[1]);
      if (skipped?.[1]) {
        cases.push({ id: skipped[1], outcome: 'skipped' });
        test = undefined;
      } else test = comment[1].trim();
    }
  }
  settle();
  return { cases, failures, reported };
}
