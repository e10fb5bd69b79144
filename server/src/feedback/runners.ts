import { posix } from 'node:path';
import { z } from 'zod';
import { parseFlatTap } from './tap';
import { parseNodeTap, tapCoverageOff } from './node-tap';
import { announceUvuDir, parseUvu, uvuArguments } from './uvu';
import type { TestCaseResult, TestRunner } from './types';

/*
 * Test commands per runner and parsers for their machine-readable output: TAP for node's test
 * runner (Node 18 has no JSON/JUnit reporter), `-rA` summary lines for pytest (no XML parser
 * needed, works on every pytest), the jest-compatible JSON report for vitest and jest, mocha's
 * JSON reporter, uvu's own reporter (uvu.ts), node-tap's nested TAP (node-tap.ts).
 */

export const RESULT_MARKER = '@@DOCKHAND-RESULT@@';
export const FILE_MARKER = 'dockhand-file:';
export const REPORT_FILE = '/tmp/dockhand-test-report.json';

export function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** Which tests of a file to run: all of them, or only the named ones (reruns). */
export interface TestTarget {
  file: string;
  /** Leaf names (node, vitest, jest, mocha) or pytest node ids; absent = the whole file. */
  names?: string[];
}

/** The shell command that runs `targets` (or the whole suite when `targets` is undefined). */
export function testCommand(runner: TestRunner, targets: TestTarget[] | undefined, options: { python?: string } = {}): string {
  const files = [...new Set((targets ?? []).map((target) => target.file))].map(shellQuote).join(' ');
  const names = (targets ?? []).flatMap((target) => target.names ?? []);
  const pattern = names.length > 0 ? names.map(escapeRegex).join('|') : undefined;
  switch (runner) {
    case 'pytest': {
      const ids = (targets ?? []).flatMap((target) => target.names ?? [target.file]).map(shellQuote).join(' ');
      return `${shellQuote(options.python ?? 'python3')} -m pytest -q -rA --tb=short -p no:cacheprovider ${ids}`.trim();
    }
    case 'node-test': {
      const base = `node --test --test-reporter=tap${pattern ? ` --test-name-pattern=${shellQuote(pattern)}` : ''}`;
      if (!targets) return base;
      // One process per file: node's TAP names the file only for failures, and a flaky test's
      // rerun must match its first run by id, passing or not.
      return `status=0; for file in ${files}; do echo "# ${FILE_MARKER} $file"; ${base} "$file" || status=1; done; exit $status`;
    }
    case 'vitest':
      return `npx --no-install vitest run --reporter=json --outputFile=${REPORT_FILE}${pattern ? ` -t ${shellQuote(pattern)}` : ''} ${files}; status=$?; echo ${RESULT_MARKER}; cat ${REPORT_FILE}; exit $status`;
    case 'jest':
      return `npx --no-install jest --json --outputFile=${REPORT_FILE}${pattern ? ` -t ${shellQuote(pattern)}` : ''} ${files}; status=$?; echo ${RESULT_MARKER}; cat ${REPORT_FILE}; exit $status`;
    case 'tape':
      return `npx --no-install tape ${files}`.trim();
    case 'ava':
      return `npx --no-install ava --tap ${files}`.trim();
    case 'tap':
      // Names are not passed: node-tap's --grep matches one level of subtests at a time.
      return targets ? `npx --no-install tap --reporter=tap ${tapCoverageOff('npx --no-install tap')} ${files}` : 'npx --no-install tap --reporter=tap';
    case 'uvu':
      return `${announceUvuDir(undefined)}; npx --no-install uvu ${uvuArguments(undefined, targets?.map((target) => target.file))}`.trim();
    case 'mocha':
      return `npx --no-install mocha --reporter json --reporter-option output=${REPORT_FILE}${pattern ? ` --grep ${shellQuote(pattern)}` : ''} ${files}; status=$?; echo ${RESULT_MARKER}; cat ${REPORT_FILE}; exit $status`;
  }
}

function escapeRegex(text: string): string {
  return `^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
}

export interface ParsedRun {
  cases: TestCaseResult[];
  /** Failing tests' output, in run order. */
  failures: string[];
  /** The runner's report was there (a TAP plan, pytest's summary line, a JSON report), even if empty. */
  reported?: boolean;
}

/**
 * `cwd`: the directory (repo-relative) the runner ran in, for paths it prints relative to it: a
 * workspace member's. There an id that does not start with a path in the member (tape's and
 * ava's always, node's for a test it names no file for) gets the member's directory in front
 * (`packages/a > suite > assertion`), so same-named tests of two members are two tests. Outside
 * a workspace ids are as they always were (stored baselines and quarantines keep matching).
 */
export function parseTestOutput(runner: TestRunner, stdout: string, files: Set<string>, cwd?: string): ParsedRun {
  const parsed = parseRunnerOutput(runner, stdout, files, cwd);
  return cwd ? withMember(parsed, cwd) : parsed;
}

/** A member's ids that do not start with a path in it get its directory in front (same-named tests of two members stay two). */
export function withMember(parsed: ParsedRun, cwd: string): ParsedRun {
  const renamed = new Map<string, string>();
  const cases = parsed.cases.map((testCase) => {
    if (testCase.id.startsWith(`${cwd}/`) || testCase.id === cwd || testCase.id.startsWith(`${cwd} > `)) return testCase;
    const id = `${cwd} > ${testCase.id}`;
    renamed.set(testCase.id, id);
    return { ...testCase, id };
  });
  // A failure's text starts `✗ <id>\n` (report-output.ts reads the id back from it).
  const failures = parsed.failures.map((failure) => {
    const end = failure.indexOf('\n');
    const id = renamed.get(failure.slice(2, end >= 0 ? end : undefined));
    return id === undefined ? failure : `✗ ${id}${end >= 0 ? failure.slice(end) : ''}`;
  });
  return { ...parsed, cases, failures };
}

function parseRunnerOutput(runner: TestRunner, stdout: string, files: Set<string>, cwd?: string): ParsedRun {
  switch (runner) {
    case 'node-test':
      return parseTap(stdout, files, cwd);
    case 'pytest':
      return parsePytest(stdout);
    case 'vitest':
    case 'jest':
      return parseJestJson(afterMarker(stdout), files, cwd);
    case 'mocha':
      return parseMochaJson(afterMarker(stdout), files, cwd);
    case 'tape':
      return parseFlatTap(stdout, (printed) => toRepoPath(printed, files, cwd));
    case 'ava':
      return parseFlatTap(stdout, (printed) => toRepoPath(printed, files, cwd), { ava: true });
    case 'tap':
      return parseNodeTap(stdout, files, cwd);
    case 'uvu':
      return parseUvu(stdout, (printed, dir) => fileBySuffix(dir && dir !== '.' ? `${dir}/${printed}` : printed, files, cwd));
  }
}

function afterMarker(stdout: string): string {
  const index = stdout.lastIndexOf(RESULT_MARKER);
  return index >= 0 ? stdout.slice(index + RESULT_MARKER.length) : stdout;
}

/** The one repository file that ends with `printed` (uvu prints paths relative to its directory), under `cwd` first. */
export function fileBySuffix(printed: string, files: Set<string>, cwd?: string): string | undefined {
  const matches = [...files].filter((file) => file === printed || file.endsWith(`/${printed}`));
  const inside = cwd ? matches.filter((file) => file.startsWith(`${cwd}/`)) : matches;
  const pick = inside.length > 0 ? inside : matches;
  return pick.length === 1 ? pick[0] : undefined;
}

/** Maps an absolute or file:// path printed by a runner back to the repo-relative path. */
export function toRepoPath(printed: string, files: Set<string>, cwd?: string): string {
  const path = printed.replace(/^file:\/\//, '').replace(/:\d+(:\d+)?$/, '');
  const parts = path.split('/');
  for (let start = 0; start < parts.length; start++) {
    const candidate = parts.slice(start).join('/');
    // A runner in a workspace package prints paths relative to that package.
    if (cwd && files.has(`${cwd}/${candidate}`)) return `${cwd}/${candidate}`;
    if (files.has(candidate)) return candidate;
  }
  return posix.basename(path);
}

interface TapEntry {
  depth: number;
  name: string;
  ok: boolean;
  directive?: 'skip' | 'todo';
  yaml: string[];
  children: number;
  path: string[];
  /** The file announced by the per-file loop, when there is one. */
  file?: string;
}

/** Node's TAP: nested subtests indented by four spaces, a YAML block after each result line. */
export function parseTap(stdout: string, files: Set<string>, cwd?: string): ParsedRun {
  const lines = stdout.split('\n');
  const entries: TapEntry[] = [];
  const stack: string[] = [];
  const open: Array<{ depth: number; children: number }> = [];
  let current: TapEntry | undefined;
  let inYaml = false;
  let currentFile: string | undefined;
  for (const line of lines) {
    const indent = line.length - line.trimStart().length;
    const depth = Math.floor(indent / 4);
    const text = line.trim();
    if (inYaml) {
      if (text === '...') inYaml = false;
      else current?.yaml.push(line.slice(Math.min(indent, depth * 4 + 2)));
      continue;
    }
    if (text.startsWith(`# ${FILE_MARKER} `)) {
      currentFile = text.slice(FILE_MARKER.length + 3);
      continue;
    }
    const subtest = /^# Subtest: (.*)$/.exec(text);
    if (subtest) {
      stack.length = depth;
      stack[depth] = subtest[1] ?? '';
      for (const frame of open) if (frame.depth < depth) frame.children++;
      open.push({ depth, children: 0 });
      continue;
    }
    const result = /^(not ok|ok) \d+ - (.*?)(?: # (SKIP|TODO)\b.*)?$/i.exec(text);
    if (result) {
      const frameIndex = open.findLastIndex((frame) => frame.depth === depth);
      const frame = frameIndex >= 0 ? open.splice(frameIndex)[0] : undefined;
      // node-tap's assertions are points with no `# Subtest:` of their own: still a child.
      for (const parent of open) if (parent.depth < depth) parent.children++;
      const name = result[2] ?? '';
      const entry: TapEntry = {
        depth,
        name,
        ok: result[1] === 'ok',
        yaml: [],
        children: frame?.children ?? 0,
        path: [...stack.slice(0, depth), name],
      };
      if (result[3]) entry.directive = result[3].toLowerCase() === 'todo' ? 'todo' : 'skip';
      if (currentFile) entry.file = currentFile;
      entries.push(entry);
      current = entry;
      continue;
    }
    if (text === '---' && current) inYaml = true;
  }
  const cases: TestCaseResult[] = [];
  const failures: string[] = [];
  const locationOf = (entry: TapEntry): string | undefined =>
    entry.yaml.map((line) => /^location: '(.*)'$/.exec(line.trim())?.[1]).find(Boolean);
  for (const [index, entry] of entries.entries()) {
    if (entry.children > 0) continue;
    // Skipped tests carry no location: the enclosing suite (reported after its children) does.
    let location = locationOf(entry);
    for (let next = index + 1; !location && next < entries.length; next++) {
      const candidate = entries[next];
      if (candidate && candidate.depth < entry.depth) location = locationOf(candidate);
    }
    const announced = entry.file !== undefined && cwd && files.has(`${cwd}/${entry.file}`) ? `${cwd}/${entry.file}` : entry.file;
    const file = announced ?? (location ? toRepoPath(location, files, cwd) : undefined);
    const outcome = entry.directive ? 'skipped' : entry.ok ? 'passed' : 'failed';
    const id = [file, ...entry.path.filter((part) => part !== file && !files.has(toRepoPath(part, files, cwd)))].filter(Boolean).join(' > ');
    const testCase: TestCaseResult = { id, outcome };
    if (file) testCase.file = file;
    if (outcome === 'failed') {
      const error = entry.yaml.filter((line) => !/^\s*(duration_ms|location|failureType|code|stack|name):/.test(line)).slice(0, 12).join('\n');
      testCase.message = firstLine(error.replace(/^error: (\|-\n?)?/, '').replace(/^\s+/, '').replace(/^'(.*)'$/m, '$1'));
      failures.push(`✗ ${id}\n${error}`);
    }
    cases.push(testCase);
  }
  return { cases, failures, reported: entries.length > 0 || lines.some((line) => /^1\.\.\d+$/.test(line.trim())) };
}

/** pytest `-rA` short summary lines plus the FAILURES section for output. */
export function parsePytest(stdout: string): ParsedRun {
  const cases: TestCaseResult[] = [];
  const summary = stdout.lastIndexOf('short test summary info');
  const tail = summary >= 0 ? stdout.slice(summary) : stdout;
  for (const line of tail.split('\n')) {
    const skip = /^SKIPPED \[\d+\] ([^:\s]+):\d+: (.*)$/.exec(line.trim());
    if (skip?.[1]) {
      cases.push({ id: skip[1], file: skip[1], outcome: 'skipped', message: skip[2] ?? '' });
      continue;
    }
    const match = /^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (?:\[\d+\] )?(\S+?)(?::\d+)?(?: - (.*))?$/.exec(line.trim());
    if (!match?.[1] || !match[2]) continue;
    const [status, id, message] = [match[1], match[2].replace(/:$/, ''), match[3]];
    const outcome = status === 'PASSED' || status === 'XFAIL' ? 'passed' : status === 'SKIPPED' ? 'skipped' : 'failed';
    const testCase: TestCaseResult = { id, file: id.split('::')[0] ?? id, outcome };
    if (message && outcome !== 'passed') testCase.message = message;
    // `ERROR tests/test_x.py`: the file could not be collected, so none of its tests ran.
    if (status === 'ERROR' && !id.includes('::')) testCase.kind = 'load_error';
    cases.push(testCase);
  }
  const failures: string[] = [];
  const sections = /={5,} (FAILURES|ERRORS) ={5,}\n([\s\S]*?)(?=\n={5,} )/g;
  for (const section of stdout.matchAll(sections)) {
    for (const block of (section[2] ?? '').split(/\n(?=_{3,} )/)) if (block.trim()) failures.push(block.trim());
  }
  const reported = cases.length > 0 || /^=+ .*\b(passed|failed|errors?|skipped|deselected|no tests ran)\b.* in [\d.]+s/m.test(stdout) || /^no tests ran/m.test(stdout);
  return { cases, failures, reported };
}

const JestReport = z.object({
  testResults: z.array(
    z.object({
      name: z.string(),
      message: z.string().optional(),
      status: z.string().optional(),
      assertionResults: z.array(
        z.object({
          fullName: z.string().optional(),
          title: z.string(),
          status: z.string(),
          failureMessages: z.array(z.string()).nullish(),
        }),
      ),
    }),
  ),
});

export function parseJestJson(text: string, files: Set<string>, cwd?: string): ParsedRun {
  const parsed = JestReport.safeParse(safeJson(text));
  if (!parsed.success) return { cases: [], failures: [], reported: false };
  const cases: TestCaseResult[] = [];
  const failures: string[] = [];
  for (const suite of parsed.data.testResults) {
    const file = toRepoPath(suite.name, files, cwd);
    if (suite.assertionResults.length === 0 && suite.status === 'failed') {
      cases.push({ id: file, file, outcome: 'failed', message: firstLine(suite.message ?? 'suite failed'), kind: 'load_error' });
      failures.push(`✗ ${file}\n${suite.message ?? ''}`);
    }
    for (const assertion of suite.assertionResults) {
      const id = `${file} > ${assertion.fullName ?? assertion.title}`;
      const outcome = assertion.status === 'passed' ? 'passed' : assertion.status === 'failed' ? 'failed' : 'skipped';
      const testCase: TestCaseResult = { id, file, outcome };
      if (outcome === 'failed') {
        const message = (assertion.failureMessages ?? []).join('\n');
        testCase.message = firstLine(message);
        failures.push(`✗ ${id}\n${message}`);
      }
      cases.push(testCase);
    }
  }
  return { cases, failures, reported: true };
}

const MochaTest = z.object({
  fullTitle: z.string(),
  file: z.string().optional(),
  err: z.object({ message: z.string().optional(), stack: z.string().optional() }).partial().optional(),
});
const MochaReport = z.object({ passes: z.array(MochaTest), failures: z.array(MochaTest), pending: z.array(MochaTest) });

export function parseMochaJson(text: string, files: Set<string>, cwd?: string): ParsedRun {
  const parsed = MochaReport.safeParse(safeJson(text));
  if (!parsed.success) return { cases: [], failures: [], reported: false };
  const cases: TestCaseResult[] = [];
  const failures: string[] = [];
  const add = (test: z.infer<typeof MochaTest>, outcome: TestCaseResult['outcome']): void => {
    const file = test.file ? toRepoPath(test.file, files, cwd) : undefined;
    const testCase: TestCaseResult = { id: file ? `${file} > ${test.fullTitle}` : test.fullTitle, outcome };
    if (file) testCase.file = file;
    if (outcome === 'failed') {
      testCase.message = firstLine(test.err?.message ?? '');
      failures.push(`✗ ${testCase.id}\n${test.err?.stack ?? test.err?.message ?? ''}`);
    }
    cases.push(testCase);
  };
  for (const test of parsed.data.passes) add(test, 'passed');
  for (const test of parsed.data.failures) add(test, 'failed');
  for (const test of parsed.data.pending) add(test, 'skipped');
  return { cases, failures, reported: true };
}

function safeJson(text: string): unknown {
  const start = text.indexOf('{');
  if (start < 0) return undefined;
  try {
    return JSON.parse(text.slice(start));
  } catch {
    return undefined;
  }
}

function firstLine(text: string): string {
  return (text.split('\n').find((line) => line.trim() !== '') ?? '').trim().slice(0, 300);
}

/** The runner of a JS suite from the root package.json: its test script first, then its devDependencies. */
export function detectJsRunner(packageJson: string | undefined): TestRunner | undefined {
  if (packageJson === undefined) return undefined;
  const parsed = z
    .object({
      scripts: z.record(z.string(), z.string()).optional(),
      devDependencies: z.record(z.string(), z.string()).optional(),
      dependencies: z.record(z.string(), z.string()).optional(),
    })
    .safeParse(safeJson(packageJson));
  if (!parsed.success) return undefined;
  const script = parsed.data.scripts?.test ?? '';
  if (/\bvitest\b/.test(script)) return 'vitest';
  if (/\bjest\b/.test(script)) return 'jest';
  if (/\bmocha\b/.test(script)) return 'mocha';
  if (/\bnode\b.*--test\b/.test(script)) return 'node-test';
  if (/\buvu\b/.test(script)) return 'uvu';
  // node-tap's binary as a word of its own: not tape, not a formatter such as tap-spec.
  if (/(^|[\s;&|/])tap(\s|$)/.test(script)) return 'tap';
  const deps = { ...parsed.data.dependencies, ...parsed.data.devDependencies };
  if ('vitest' in deps) return 'vitest';
  if ('jest' in deps) return 'jest';
  if ('mocha' in deps) return 'mocha';
  if ('uvu' in deps) return 'uvu';
  if ('tap' in deps) return 'tap';
  return 'node-test';
}
