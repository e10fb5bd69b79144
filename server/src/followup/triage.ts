import { isRed, type PullRequestCheck } from '../forge/checks';

/*
 * Why is a check on a followed PR red? Asked before any round, so no round is spent on a red the
 * PR did not cause (issue 26):
 *   infrastructure  the job failed before its tests ran: timed out, cancelled, runner lost, out of
 *                   memory or disk, network (from the conclusion and the log), no test named failing;
 *   flaky           the same check at the same commit also passed (a re-run);
 *   pre_existing    the same check fails at the PR's base commit too, or every test the log names
 *                   failing already fails there (the baseline);
 *   caused          anything else: the check passes at the base (or never ran there) and the PR's
 *                   head fails it. Only this starts a round.
 * The evidence says which results decided it, for the task's log and the PR comment.
 */

export type TriageClass = 'caused' | 'pre_existing' | 'flaky' | 'infrastructure';

export interface TriageInput {
  /** The red result on the PR's head. */
  check: PullRequestCheck;
  /** Every result of checks on the PR's head (re-runs included). */
  headChecks: readonly PullRequestCheck[];
  /** Every result of checks on the PR's base commit. */
  baseChecks: readonly PullRequestCheck[];
  /** Test ids that fail at the base commit (the repository's baseline), when known. */
  baselineFailures?: readonly string[];
}

export interface Triage {
  triage: TriageClass;
  evidence: string;
  /** Tests the log names as failing (the round starts from them). */
  failingTests: string[];
}

/** Log lines that say the job died around its tests, not in them. */
const INFRASTRUCTURE = [
  /runner has received a shutdown signal/i,
  /lost communication with the server/i,
  /exceeded the maximum execution time/i,
  /job (?:was|has been) (?:cancelled|canceled)/i,
  /The operation was canceled/i,
  /the runner was lost or never started/i,
  /The hosted runner .* lost communication|runner .* (?:did not|didn't) (?:connect|respond)/i,
  /\bout of memory\b|\bOOMKilled\b|Cannot allocate memory/i,
  /No space left on device/i,
  /Could not resolve host|ECONNRESET|ETIMEDOUT|EAI_AGAIN|Temporary failure in name resolution/i,
  /\bKilled\b.*signal 9|\bSIGKILL\b|exit code 137/i,
  /timed out after|\btimeout\b.*\bkilled\b/i,
];

/** Failing test names in a CI log: vitest/jest, node:test/TAP, pytest, go test, mocha. */
const FAILING_TEST = [
  /^\s*(?:FAIL|×|✗|✕)\s+(\S.*?)\s*$/,
  /^\s*● (.+?)\s*$/,
  /^not ok \d+ - (.+?)\s*(?:#.*)?$/,
  /^FAILED (\S+?)(?: - .*)?$/,
  /^--- FAIL: (\S+)/,
  /^\s+\d+\) (.+)$/,
];

/** A test file a vitest/jest log names before its tests (`FAIL src/a.test.ts`, vitest's `❯ src/a.test.ts (3 tests | 1 failed)`). */
const TEST_FILE = /^\s*(?:FAIL|❯)\s+([\w@./-]+\.[cm]?[jt]sx?)(?:\s+\(.*\))?(?:\s+\d+(?:\.\d+)?\s*m?s)?\s*$/;
const DURATION = /\s+(?:\[[\d.]+\s*m?s\]|\([\d.]+\s*m?s\)|[\d.]+\s*m?s)$/;
/** jest's own words for a file that did not load: the file is the id, not a test. */
const NOT_A_TEST = /^Test suite failed to run$/;

/**
 * The failing tests a CI log names, as the repository's test ids: vitest and jest ids are
 * `file > describe > test` (the feedback engine's), so a test line under its file's heading (jest's
 * `FAIL file` then `● describe › test`, vitest's `❯ file` then `× describe > test`) gets the file
 * put in front and jest's `›` read as ` > `; pytest's node ids, TAP, go and mocha names are as
 * printed. A file named only as failing stays an id of its own (the file is what failed to load).
 */
export function failingTestsInLog(log: string): string[] {
  const found = new Set<string>();
  let file: string | undefined;
  for (const line of log.split('\n')) {
    const heading = TEST_FILE.exec(line);
    if (heading?.[1]) {
      file = heading[1];
      if (/^\s*FAIL/.test(line)) found.add(file);
      continue;
    }
    for (const pattern of FAILING_TEST) {
      const match = pattern.exec(line);
      if (!match?.[1]) continue;
      const name = match[1].replace(DURATION, '').replace(/ › /g, ' > ').trim();
      if (NOT_A_TEST.test(name)) break;
      const inFile = pattern === FAILING_TEST[0] || pattern === FAILING_TEST[1];
      const hasFile = /^[\w@./-]+\.[cm]?[jt]sx?(?: > |$)/.test(name);
      found.add(inFile && file && !hasFile ? `${file} > ${name}` : name);
      break;
    }
  }
  // A file named failing whose failing tests are named too is not a test of its own, nor is a
  // test line without its describe blocks (jest's `✕ subtracts`) when its whole id is named too.
  const all = [...found];
  const ids = all.filter((id) => !all.some((other) => other !== id && (other.startsWith(`${id} > `) || shorterIdOf(id, other))));
  return ids.slice(0, 50);
}

/** `file > test` is `file > describe > test` without its describe blocks. */
function shorterIdOf(id: string, other: string): boolean {
  const cut = id.indexOf(' > ');
  if (cut < 0) return false;
  return other.startsWith(id.slice(0, cut + 3)) && other.endsWith(id.slice(cut)) && other.length > id.length;
}

function infrastructureSign(check: PullRequestCheck): string | undefined {
  if (check.conclusion === 'timed_out' || check.conclusion === 'cancelled') return `the job ended ${check.conclusion.replace('_', ' ')}`;
  for (const pattern of INFRASTRUCTURE) {
    const line = check.log.split('\n').find((candidate) => pattern.test(candidate));
    if (line) return `the log says "${line.trim().slice(0, 200)}"`;
  }
  return undefined;
}

export function triageCheck(input: TriageInput): Triage {
  const { check } = input;
  const failingTests = failingTestsInLog(check.log);
  const sign = infrastructureSign(check);
  if (sign && failingTests.length === 0) {
    return { triage: 'infrastructure', evidence: `${check.name} failed before its tests ran: ${sign}; no test is named failing`, failingTests };
  }
  const passed = input.headChecks.find((other) => other.name === check.name && other.id !== check.id && other.conclusion === 'success');
  if (passed) {
    return { triage: 'flaky', evidence: `${check.name} both failed and passed at the same commit ${check.sha.slice(0, 12)} (runs ${check.id} and ${passed.id})`, failingTests };
  }
  const atBase = input.baseChecks.filter((other) => other.name === check.name).sort((a, b) => a.id - b.id).at(-1);
  if (atBase && isRed(atBase.conclusion)) {
    return { triage: 'pre_existing', evidence: `${check.name} fails at the base commit ${atBase.sha.slice(0, 12)} too (${atBase.conclusion}, run ${atBase.id})`, failingTests };
  }
  const baseline = new Set(input.baselineFailures ?? []);
  if (!atBase && failingTests.length > 0 && failingTests.every((test) => baseline.has(test))) {
    return { triage: 'pre_existing', evidence: `every test the log names failing fails at the base in its baseline: ${failingTests.join(', ')}`, failingTests };
  }
  const base = atBase ? `passes at the base commit ${atBase.sha.slice(0, 12)} (run ${atBase.id})` : 'has no failing run at the base commit and the tests it names do not fail in the base\'s baseline';
  return { triage: 'caused', evidence: `${check.name} ${base} and fails on the PR's head${failingTests.length ? ` (${failingTests.join(', ')})` : ''}`, failingTests };
}
