import type { SuiteRun } from './suite-run';
import type { TestReport } from './types';

/**
 * The compact text of a run for the model: the verdict line, notes, then failing tests' output
 * up to a budget. New failures come first; failures that already fail at the base come after
 * them, marked, so the model sees what its change broke before what it inherited.
 */
export function compactOutput(
  report: TestReport,
  runs: SuiteRun[],
  quarantinedIds: Set<string>,
  preExistingIds: Set<string>,
  notes: string[],
  cap: number,
): string {
  const head = [
    `${report.ok ? 'PASS' : 'FAIL'}: ${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped (${report.scope}; ${report.selectionReason})`,
    ...notes,
  ];
  if (report.quarantined.length > 0) head.push(`quarantined (not deciding): ${report.quarantined.join(', ')}`);
  const preExisting = report.preExisting ?? [];
  if (preExisting.length > 0) head.push(`pre-existing (also fail at the base commit, not deciding): ${preExisting.join(', ')}`);
  const idOf = (failure: string): string => failure.slice(2, failure.indexOf('\n') >= 0 ? failure.indexOf('\n') : undefined);
  const all = runs.flatMap((run) => run.failures).filter((failure) => !quarantinedIds.has(idOf(failure)));
  const failures = [...all.filter((failure) => !preExistingIds.has(idOf(failure))), ...all.filter((failure) => preExistingIds.has(idOf(failure))).map((failure) => `(pre-existing) ${failure}`)];
  let output = head.join('\n');
  for (const [index, failure] of failures.entries()) {
    const piece = `\n\n${failure.slice(0, 1500)}`;
    if (output.length + piece.length > cap) {
      output += `\n\n… ${failures.length - index} more failure(s) not shown`;
      break;
    }
    output += piece;
  }
  return output;
}
