import type { SmartFeedbackEngine } from '../feedback/engine';
import type { TestReport } from '../feedback/types';
import type { Sandbox } from '../sandbox/types';
import { outcomeOf, type TestOutcome } from './test-ids';

/*
 * How the grader runs the listed tests: the ways the task's verified stop runs them
 * (agent/verify.ts), through the same feedback engine, so its steps, side channel and parsers are
 * the ones that counted the task's tests.
 *
 * 1. `full`: the repository's whole test command (or the recipe's CI test steps), as the verified
 *    stop's full-suite run.
 * 2. `selected`: the selection the verified stop runs first: the test files the changed files reach
 *    (here the model patch's sources and the test files test_patch adds or changes), passed to the
 *    runner on its own line. Where the whole command cannot be read per test (a step that sets its
 *    own NODE_OPTIONS, a wrapper the side channel cannot reach), this run still counts them, as
 *    it did in the task. Run only for listed tests the full run did not find, and only when the
 *    selection is narrower than the whole command (else it would be the same run again).
 * 3. `pre-pr`: the recipe's pre-PR command, the verified stop's last run, for tests still missing.
 *
 * A listed test's outcome in a round is taken from every way that found it: failed anywhere is
 * failed; otherwise passed anywhere is passed; otherwise skipped; found nowhere is missing.
 */

export type GradeWay = 'full' | 'selected' | 'pre-pr';

export interface WayReport {
  way: GradeWay;
  report: TestReport;
}

export interface GradeRound {
  reports: WayReport[];
  /** Per listed id: its outcome in this round and the first way that found it. */
  outcomes: Map<string, { outcome: TestOutcome; way?: GradeWay }>;
}

/** One listed test over the reports of a round (see the header). */
export function combinedOutcome(id: string, reports: readonly WayReport[]): { outcome: TestOutcome; way?: GradeWay } {
  const found = reports.map(({ way, report }) => ({ way, outcome: outcomeOf(id, report.cases) })).filter((entry) => entry.outcome !== 'missing');
  const first = found[0];
  if (!first) return { outcome: 'missing' };
  const outcome = found.some((entry) => entry.outcome === 'failed') ? 'failed' : found.some((entry) => entry.outcome === 'passed') ? 'passed' : 'skipped';
  return { outcome, way: first.way };
}

/** One round: the full run, then the other ways for what it did not find. */
export async function gradeRound(engine: SmartFeedbackEngine, sandbox: Sandbox, listed: readonly string[]): Promise<GradeRound> {
  const reports: WayReport[] = [{ way: 'full', report: await engine.runTests(sandbox, { scope: 'full' }) }];
  const missing = () => listed.filter((id) => combinedOutcome(id, reports).outcome === 'missing');
  if (missing().length > 0 && (await engine.analyze(sandbox)).selection.mode === 'selected') {
    reports.push({ way: 'selected', report: await engine.runTests(sandbox, { scope: 'selected' }) });
  }
  if (missing().length > 0 && sandbox.environment?.prePr) {
    reports.push({ way: 'pre-pr', report: await engine.runTests(sandbox, { scope: 'full', prePr: true }) });
  }
  return { reports, outcomes: new Map(listed.map((id) => [id, combinedOutcome(id, reports)])) };
}

/** What ran, for the grade: `full: npm test → vitest run; selected: vitest run test/a.test.ts`. */
export function describeRound(round: GradeRound): string {
  return round.reports.map(({ way, report }) => `${way}: ${report.command}`).join('; ');
}
