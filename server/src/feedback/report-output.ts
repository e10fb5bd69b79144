import { shortName, type SuiteRun } from './suite-run';
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
  const heading = (failure: string): string => failure.slice(2, failure.indexOf('\n') >= 0 ? failure.indexOf('\n') : undefined);
  // A step's red exit is headed `✗ <step> exited with N`; its case is `<step> (exited with N)`.
  const idOf = (failure: string): string => heading(failure).replace(/ (exited with -?\d+|could not start)$/, ' ($1)');
  const all = runs.flatMap((run) => run.failures).filter((failure) => !quarantinedIds.has(idOf(failure)));
  const failures = [...all.filter((failure) => !preExistingIds.has(idOf(failure))), ...all.filter((failure) => preExistingIds.has(idOf(failure))).map((failure) => `(pre-existing) ${failure}`)];
  let output = head.join('\n');
  for (const [index, failure] of failures.entries()) {
    // A selection's command line heads its failure: cut, so the failure's own words fit (suite-run.ts failureTail).
    const first = failure.indexOf('\n') >= 0 ? failure.indexOf('\n') : failure.length;
    const shown = failure.slice(0, first).length > 200 ? `${shortName(failure.slice(0, first))}${failure.slice(first)}` : failure;
    const piece = `\n\n${shown.slice(0, 1500)}`;
    if (output.length + piece.length > cap) {
      output += `\n\n… ${failures.length - index} more failure(s) not shown`;
      break;
    }
    output += piece;
  }
  return output;
}
