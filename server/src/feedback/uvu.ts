import type { TestCaseResult } from './types';

/*
 * uvu's reporter (0.3 to 0.5; it has no other): a header per file (its path relative to the
 * directory uvu was given), a line per suite (` name ` then `•` per passing and `✘` per failing
 * test, then `(passed / total)`), the failing tests' blocks after their suite's line
 * (`FAIL  suite  "test"`, the message, the stack), and a summary (`Total:`, `Passed:`,
 * `Skipped:`). It forces colour unless NO_COLOR is set, so escapes are stripped first.
 *
 * uvu names failing tests only: a passing test is one `•`, so passing cases get positional ids
 * (`test/math.js > strings > (passing 2)`) that count right but do not carry the test's name
 * (a reproducing test named by name is matched through the baseline: reproducing.ts
 * `passedUnnamed`), and skipped tests (`test.skip`) exist only as the summary's count. A file that throws while
 * loading ends the process with its stack and no summary: no report (infrastructure, not red).
 */

export interface UvuRun {
  cases: TestCaseResult[];
  failures: string[];
  reported: boolean;
}

/**
 * Maps a printed path back to a repo-relative one; `dir` is uvu's directory when the run
 * announced it (UVU_DIR_MARKER: the headers are relative to it, so `index.js` of `uvu test` is
 * test/index.js, not src/index.js).
 */
type ToRepoPath = (printed: string, dir: string | undefined) => string | undefined;

/** Echoed before uvu runs (`# dockhand-uvu-dir: test`): the directory its file headers are relative to. */
export const UVU_DIR_MARKER = 'dockhand-uvu-dir:';

/** The shell line that announces `dir` to the parser. */
export function announceUvuDir(dir: string | undefined): string {
  const clean = (dir ?? '.').replace(/^\.\//, '').replace(/\/+$/, '') || '.';
  return `echo '# ${UVU_DIR_MARKER} ${clean.replace(/'/g, '')}'`;
}

const ANSI = /\u001b\[[0-9;]*[A-Za-z]/g;
const SUITE_LINE = /^(.*?)\s*((?:[✘•]\s*)*)\s*\((\d+) \/ (\d+)\)\s*$/;
const FAIL_LINE = /^\s*FAIL\s+(.*?)\s*$/;
const SUMMARY = /^\s*(Total|Passed|Skipped):\s+(\d+)\s*$/;
const SOURCE_FILE = /^\S.*\.(?:[cm]?[jt]sx?)$/;

export function parseUvu(stdout: string, toRepoPath: ToRepoPath): UvuRun {
  const lines = stdout.replace(ANSI, '').split('\n');
  const cases: TestCaseResult[] = [];
  const failures: string[] = [];
  const summary: Record<string, number> = {};
  let file: string | undefined;
  let dir: string | undefined;
  let suite = '';
  let open: { testCase: TestCaseResult; lines: string[] } | undefined;
  const close = (): void => {
    if (!open) return;
    const detail = open.lines.filter((line) => !/^\s+at /.test(line)).join('\n').trim();
    open.testCase.message = (detail.split('\n').find((line) => line.trim() !== '')?.trim() ?? '').slice(0, 300);
    failures.push(`✗ ${open.testCase.id}\n${open.lines.join('\n').trim().split('\n').slice(0, 16).join('\n')}`);
    open = undefined;
  };
  const idOf = (name: string): string => [file, suite, name].filter((part) => part !== undefined && part !== '').join(' > ');
  for (const line of lines) {
    if (line.startsWith(`# ${UVU_DIR_MARKER} `)) {
      dir = line.slice(UVU_DIR_MARKER.length + 3).trim();
      continue;
    }
    const total = SUMMARY.exec(line);
    if (total?.[1]) {
      close();
      summary[total[1]] = Number(total[2]);
      continue;
    }
    const fail = FAIL_LINE.exec(line);
    if (fail) {
      close();
      // `FAIL  suite  "test"`: the suite is the one whose line came last.
      let rest = fail[1] ?? '';
      if (suite && rest.startsWith(suite)) rest = rest.slice(suite.length).trim();
      const name = rest.replace(/^"(.*)"$/, '$1');
      const testCase: TestCaseResult = { id: idOf(name), outcome: 'failed' };
      if (file) testCase.file = file;
      cases.push(testCase);
      open = { testCase, lines: [] };
      continue;
    }
    const suiteLine = SUITE_LINE.exec(line);
    if (suiteLine && (suiteLine[2] !== '' || suiteLine[4] === '0')) {
      close();
      suite = (suiteLine[1] ?? '').trim();
      const passed = Number(suiteLine[3]);
      for (let index = 1; index <= passed; index++) {
        const testCase: TestCaseResult = { id: idOf(`(passing ${index})`), outcome: 'passed' };
        if (file) testCase.file = file;
        cases.push(testCase);
      }
      continue;
    }
    if (SOURCE_FILE.test(line) && !line.includes(' (')) {
      close();
      file = toRepoPath(line.trim(), dir) ?? line.trim();
      suite = '';
      continue;
    }
    open?.lines.push(line);
  }
  close();
  for (let index = 1; index <= (summary.Skipped ?? 0); index++) cases.push({ id: `(skipped ${index})`, outcome: 'skipped' });
  return { cases, failures, reported: summary.Total !== undefined };
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * uvu's positional arguments: `dir` (the script's own, default `.`) and, for selected files, a
 * pattern matching exactly their paths relative to it (uvu tests it case-insensitively against
 * each file's path under `dir`). Files outside `dir` cannot be selected this way and are left out.
 */
export function uvuArguments(dir: string | undefined, files: readonly string[] | undefined): string {
  const base = (dir ?? '.').replace(/^\.\//, '').replace(/\/+$/, '') || '.';
  if (!files || files.length === 0) return dir ?? '';
  const relative = [...new Set(files.map((file) => file.replace(/^\.\//, '')))]
    .map((file) => (base === '.' ? file : file.startsWith(`${base}/`) ? file.slice(base.length + 1) : undefined))
    .filter((file): file is string => file !== undefined);
  const pattern = `^(?:${relative.map(escapeRegex).join('|')})$`;
  const quote = (value: string): string => (/^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`);
  return `${quote(base)} ${quote(pattern)}`;
}
