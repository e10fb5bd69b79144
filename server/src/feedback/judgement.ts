import type { BaselineResult, TestCaseResult, TestStepOutcome } from './types';

/*
 * Which steps of a run can judge the change. A step counted per test is judged test by test
 * against the baseline. A step counted by its exit status alone judges the change only where it
 * passed at the base: one that failed there (a `tsd` red at the base, a `tox` whose per-test
 * results never reached Dockhand) says nothing either way — red now, it is no reason to refuse
 * `finish` (whatever its exit code or, for a selection's runner step, its command line); green
 * now, it is no evidence that the change works (a change that stops the tests also turns it
 * green). Such a step is "cannot judge". A run none of whose steps can judge the change verified
 * nothing (`judged: false`): the verified stop says so before review.
 */

export type StepJudgement = NonNullable<TestStepOutcome['judgement']>;

/** The step of the base's run that is this step: same key (the step as written), else same name. */
function atBase(step: TestStepOutcome, baseline: BaselineResult): TestStepOutcome | undefined {
  const steps = baseline.steps ?? [];
  const key = step.key ?? step.name;
  return steps.find((base) => (base.key ?? base.name) === key) ?? steps.find((base) => base.name === step.name);
}

/** Sets each step's `judgement` (in place). Without a baseline every step judges as counted. */
export function judgeSteps(steps: TestStepOutcome[], baseline: BaselineResult | undefined): void {
  for (const step of steps) {
    if (step.counted === 'tests') {
      step.judgement = 'tests';
      continue;
    }
    const base = baseline ? atBase(step, baseline) : undefined;
    step.judgement = base && base.counted === 'exit status' && base.exitCode !== 0 ? 'cannot judge' : 'exit status';
  }
}

/** The steps of a baseline's own run: a step that failed there by its exit status cannot judge a change. */
export function judgeBaseSteps(steps: TestStepOutcome[]): void {
  for (const step of steps) step.judgement = step.counted === 'tests' ? 'tests' : step.exitCode !== 0 ? 'cannot judge' : 'exit status';
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The failing cases that stand for a "cannot judge" step's red exit (`tsd (exited with 1)`): they decide nothing. */
export function unjudgeableCases(steps: readonly TestStepOutcome[], cases: readonly TestCaseResult[]): Set<string> {
  const ids = new Set<string>();
  for (const step of steps) {
    if (step.judgement !== 'cannot judge') continue;
    const pattern = new RegExp(`^${escapeRegex(step.name)} \\((exited with -?\\d+|could not start)\\)$`);
    for (const testCase of cases) if (testCase.kind === 'exit_status' && testCase.outcome === 'failed' && pattern.test(testCase.id)) ids.add(testCase.id);
  }
  return ids;
}

/**
 * Can this run judge the change at all: a step counted per test that ran tests, or a step judged
 * by an exit status that passed at the base. Without steps (a detected runner, no recipe): the
 * tests it ran.
 */
export function judgesTheChange(steps: readonly TestStepOutcome[], cases: readonly TestCaseResult[]): boolean {
  if (steps.length === 0) return cases.some((testCase) => testCase.kind === undefined && testCase.outcome !== 'skipped');
  return steps.some((step) => step.judgement === 'exit status' || (step.judgement === 'tests' && step.passed + step.failed > 0));
}

/**
 * What a base run lets a change be verified by (the readiness report's `judgedBy`): per-test
 * counts where a step counted tests one by one (or, without steps, the runner reported tests); else
 * the exit status of the steps that can judge by it (`passedByExitStatus`: passed at the base, and
 * not a typecheck beside failing test steps); else nothing.
 */
export function baseJudgedBy(
  steps: readonly TestStepOutcome[] | undefined,
  countedTests: number,
  judgingByExitStatus: readonly TestStepOutcome[],
  infrastructure: boolean,
): 'tests' | 'exit status' | 'nothing' {
  if (infrastructure) return 'nothing';
  if (!steps || steps.length === 0) return countedTests > 0 ? 'tests' : 'nothing';
  if (steps.some((step) => step.counted === 'tests' && step.passed + step.failed > 0)) return 'tests';
  return judgingByExitStatus.length > 0 ? 'exit status' : 'nothing';
}
