import { runsTestCommand } from '../sandbox/ci-step-kind';
import type { TestStepOutcome } from './types';

/*
 * How the steps of a test command read for a person: the readiness report's "tests at base" and
 * its blockers. A step the side channel read is counted per test; any other step is counted by
 * its exit status — said so, never "ran no test".
 */

/** `lint: exited with 2 (pre-existing at the base); node --test: 12 passed, 1 failed; build: passed (counted by exit status)`. */
export function describeSteps(steps: readonly TestStepOutcome[], atBase = true): string {
  return steps
    .map((step) => {
      if (step.counted === 'tests') return `${step.name}: ${step.passed} passed, ${step.failed} failed`;
      if (step.exitCode === 0) return `${step.name}: passed (counted by exit status)`;
      // judgement.ts: red by its exit status at the base, the step says nothing about a change.
      const judges = step.judgement === 'cannot judge' ? '; it cannot judge a change' : '';
      return `${step.name}: exited with ${step.exitCode} (counted by exit status${atBase ? '; a failure at the base is pre-existing, the later steps still ran' : ''}${judges})`;
    })
    .join('; ');
}

/**
 * A step that passed by its exit status alone: a change can still be judged on it (`tsc && xo &&
 * ts-scripts test`, xo red at the base). Not where every step that runs tests failed at the base
 * and only a build or a typecheck passed (typanion: `yarn tsc` passed, its mocha step exited 128):
 * then no test passes, whatever the exit statuses say.
 */
export function passedByExitStatus(steps: readonly TestStepOutcome[] | undefined): TestStepOutcome[] {
  const passing = (steps ?? []).filter((step) => step.counted === 'exit status' && step.exitCode === 0);
  const runsTests = (step: TestStepOutcome) => step.counted === 'tests' || runsTestCommand(step.name);
  const testStepsFailed = (steps ?? []).some((step) => step.exitCode !== 0 && runsTests(step));
  return testStepsFailed && !passing.some(runsTests) ? [] : passing;
}
