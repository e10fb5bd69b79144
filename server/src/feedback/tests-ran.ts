import type { SuiteRun } from './suite-run';

/**
 * Tests the runs ran: passed or failed cases that are tests (not a file that failed to load, not
 * a command's exit status). Undefined when a run of a command Dockhand does not know reported no
 * test: its exit status is all there is, and it may well have run tests. The verified stop needs
 * it: a full suite that ran no test (pytest stops at a collection error) verifies nothing.
 */
export function testsRan(runs: readonly SuiteRun[]): number | undefined {
  let ran = 0;
  for (const run of runs) {
    const tests = run.cases.filter((testCase) => testCase.kind === undefined && testCase.outcome !== 'skipped').length;
    // A runner step the side channel could not read (started in a way the preload does not know) is counted by its exit status.
    const byExitStatus = run.steps.some((step) => step.name === run.plan.command && step.counted === 'exit status');
    if (tests === 0 && (run.plan.runner === 'unknown' || run.plan.runner === 'custom' || byExitStatus)) return undefined;
    ran += tests;
  }
  return ran;
}

/** `{ ran }` for a report or a baseline, or nothing when the runs give no count. */
export function ranOf(runs: readonly SuiteRun[]): { ran?: number } {
  const ran = testsRan(runs);
  return ran === undefined ? {} : { ran };
}
