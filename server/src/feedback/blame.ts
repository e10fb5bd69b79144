import type { SuiteRun } from './suite-run';
import type { BaselineResult } from './types';

/*
 * When a run of the changed workspace fails in a way that would otherwise read as the
 * environment's fault (a hang, a runner that does not start), but the base ran the same suite:
 * the change is to blame, and the failure becomes a red case the agent is told to fix.
 */

/** A timeout turned into a red case: the suite finished at the base, so the change made it hang. */
export function blameTimeout(run: SuiteRun, baseSeconds: number): void {
  const message = `timed out; at the base commit the whole suite finished in ${baseSeconds.toFixed(1)} s, so the change makes a test hang`;
  run.cases.push({ id: `${run.plan.command} (timed out)`, outcome: 'failed', message, kind: 'exit_status' });
  run.failures.push(`✗ ${run.plan.command} (timed out)\n${message}\n${run.infrastructure?.output ?? ''}`);
  delete run.infrastructure;
}

/** Files that decide how a repository's tests run (a change to one can stop the runner itself). */
const TEST_CONFIGURATION = /(^|\/)(package\.json|(jest|vitest|vite|ava|playwright|karma|babel|tsup|nyc|c8)\.config\.[cm]?[jt]s(on)?|\.mocharc(\.[a-z]+)?|\.taprc|\.c8rc(\.json)?|\.nycrc(\.json)?|tsconfig[\w.-]*\.json|\.babelrc(\.json)?|pytest\.ini|pyproject\.toml|setup\.cfg|tox\.ini|conftest\.py|noxfile\.py|Makefile|(package-lock|npm-shrinkwrap)\.json|pnpm-lock\.yaml|yarn\.lock)$/;

export function configuresTests(path: string): boolean {
  return TEST_CONFIGURATION.test(path);
}

/**
 * A runner that worked at the base and does not start with the change, turned into a red case the
 * agent must fix (it is told so, and the verified stop refuses to finish) instead of a runner
 * failure blamed on the environment.
 */
export function blameRunner(run: SuiteRun, baseline: BaselineResult, runnerFiles: readonly string[]): void {
  const failure = run.infrastructure;
  if (!failure) return;
  const counted = baseline.ran ?? baseline.passed + baseline.failed;
  const atBase = `at the base commit \`${baseline.command}\` ran${counted > 0 ? ` ${counted} test(s)` : ''} without this failure`;
  const touched = runnerFiles.length > 0 ? `; the change touches how the tests run (${runnerFiles.join(', ')})` : '';
  const message = `${failure.message}; ${atBase}${touched}, so the change broke the test run: make the runner start again`;
  run.cases.push({ id: `${run.plan.command} (the runner did not start with the change)`, outcome: 'failed', message, kind: 'exit_status' });
  run.failures.push(`✗ ${run.plan.command} (the runner did not start with the change)\n${message}\n${failure.output}`);
  delete run.infrastructure;
}
