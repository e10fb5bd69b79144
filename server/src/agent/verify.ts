import type { Ticket } from '@dockhand/protocol';
import type { FeedbackEngine, TestInfrastructure, TestReport } from '../feedback/types';
import type { ModelClient } from '../model/types';
import type { Sandbox } from '../sandbox/types';
import { recordModelTurn } from './model-turn';
import type { EventSink } from './ports';
import { buildReviewRequest, reviewVerdictOf, type ReviewVerdict } from './review';
import { describeInfrastructure, describeTestReport, describeUnjudged, runnerFailedData, testsFinishedData } from './tools/run-tests';
import { isCiConfigPath, isTestPath } from './tools/paths';

/*
 * The verified stop. "Done" is never the model's word alone: when it calls finish, the server
 * checks the diff itself, runs the selected tests, asks a reviewer model for a structured
 * verdict and then, once, the full suite (or the recipe's pre-PR command) as the PR will be
 * judged. Anything short of green tests and an approving review goes back to the model as the
 * finish call's error result. Failures that already fail at the base commit (pre-existing) and
 * quarantined flaky tests do not count — except the task's reproducing tests (the ones its ticket
 * names, or given at submission): they fail at the base, but must have run and passed. A runner that cannot run is not a red test: the result
 * carries `infrastructure` and the loop stops the task instead of asking the model to fix it.
 * A full suite that ran no test, or fewer than at the base, verifies nothing (`ranTooFew`).
 */

export interface VerifyInput {
  sandbox: Sandbox;
  feedback: FeedbackEngine;
  model: ModelClient;
  events: EventSink;
  ticket: Ticket;
  allowTestEdits: boolean;
  summary: string;
  signal: AbortSignal;
  review: boolean;
  turn: number;
  maxTokens: number;
  /** The task's reproducing tests: failing at the base, they must pass (and have run) before finishing. */
  reproducingTests?: readonly string[];
  /** Named ones the suite at the base does not have: they decide when they run, but need not run. */
  unknownReproducingTests?: readonly string[];
  /** Tests the full suite ran at the base commit (the baseline's `ran`); absent when not known. */
  baselineRan?: number;
}

export interface VerifyResult {
  verified: boolean;
  /** What the model reads: why the finish was refused, or confirmation. */
  feedback: string;
  diff: string;
  tests?: TestReport;
  review?: ReviewVerdict;
  /** The test runner failed (not the tests): the task stops with `test_infrastructure`. */
  infrastructure?: TestInfrastructure;
}

/** Paths a unified diff touches (the b/ side, which is the a/ side for deletions). */
export function changedPaths(diff: string): string[] {
  const paths = new Set<string>();
  for (const match of diff.matchAll(/^diff --git a\/(.+?) b\/(.+)$/gm)) paths.add(match[2] ?? match[1] ?? '');
  return [...paths].filter((path) => path.length > 0);
}

async function review(input: VerifyInput, diff: string, tests: TestReport): Promise<ReviewVerdict> {
  const request = buildReviewRequest({ ticket: input.ticket, diff, summary: input.summary, tests: describeTestReport(tests) });
  const result = await input.model.turn({ ...request, maxTokens: input.maxTokens, signal: input.signal });
  await recordModelTurn(input.events, input.turn, result, 'review');
  return reviewVerdictOf(result.message);
}

export async function verifyFinish(input: VerifyInput): Promise<VerifyResult> {
  const diff = await input.sandbox.diff();
  const paths = changedPaths(diff);
  if (paths.length === 0) {
    return {
      verified: false,
      diff,
      feedback:
        'Finish refused: the workspace has no changes against the base commit. Make the change the ticket asks for, ' +
        'or, if no change is needed, explain that in plain text.',
    };
  }
  const blocked = paths.filter((path) => isCiConfigPath(path) || (!input.allowTestEdits && isTestPath(path)));
  if (blocked.length > 0) {
    return {
      verified: false,
      diff,
      feedback:
        `Finish refused: the diff changes files this ticket does not allow (${blocked.join(', ')}): test files ` +
        'without permission or CI configuration. Restore them to the base version (e.g. run_command ' +
        `"git checkout ${input.sandbox.baseSha} -- <path>") and make the code pass the existing tests.`,
    };
  }

  const tests = await input.feedback.runTests(input.sandbox, { scope: 'selected', signal: input.signal, ...reproducingOption(input) });
  const stopped = await infrastructureStop(input, diff, tests);
  if (stopped) return stopped;
  if (!tests.ok) {
    return {
      verified: false,
      diff,
      tests,
      feedback: `Finish refused: the server ran the tests and they are red.\n${describeTestReport(tests)}\nFix the failures, then call finish again.`,
    };
  }
  if (!input.review) {
    const full = await fullSuite(input, diff, tests);
    if (!full.verified) return full;
    return { verified: true, diff, tests: full.tests ?? tests, feedback: `Verified: ${passedText(full.tests ?? tests)}. Review skipped by configuration.${unjudgedNote(tests, full.tests)}` };
  }

  const verdict = await review(input, diff, tests);
  await input.events.append({
    type: 'review.finished',
    data: { approved: verdict.approved, problems: verdict.problems, summary: verdict.summary },
  });
  if (!verdict.approved) {
    const problems = verdict.problems.length > 0 ? verdict.problems.map((problem) => `- ${problem}`).join('\n') : '- (no details given)';
    return {
      verified: false,
      diff,
      tests,
      review: verdict,
      feedback: `Finish refused: tests pass, but the code review found problems:\n${problems}\nAddress them, run the tests, then call finish again.`,
    };
  }
  const full = await fullSuite(input, diff, tests);
  if (!full.verified) return { ...full, review: verdict };
  return {
    verified: true,
    diff,
    tests: full.tests ?? tests,
    review: verdict,
    feedback: `Verified: ${passedText(full.tests ?? tests)} and the review approved the change.${unjudgedNote(tests, full.tests)}`,
  };
}

/**
 * A verification whose runs could judge nothing (every step counted by an exit status that failed
 * at the base): said in the finish result, the review's request and each run's `tests.finished`
 * (`judged: false`), so the task reaches review saying its tests verified nothing.
 */
function unjudgedNote(...reports: Array<TestReport | undefined>): string {
  const runs = reports.filter((report): report is TestReport => report !== undefined);
  const last = runs.at(-1);
  if (!last || !runs.every((report) => report.judged === false)) return '';
  return ` ${describeUnjudged(last)}`;
}

function passedText(tests: TestReport): string {
  const preExisting = tests.preExisting ?? [];
  const note = preExisting.length > 0 ? ` (${preExisting.length} pre-existing failure(s) still fail: ${preExisting.join(', ')})` : '';
  const fixed = (tests.reproducing ?? []).filter((test) => test.outcome === 'passed').map((test) => test.id);
  const reproduced = fixed.length > 0 ? `; the ticket's reproducing test(s) pass: ${fixed.join(', ')}` : '';
  return `${tests.passed} tests passed${tests.scope === 'full' ? ' in the full suite' : ''}${note}${reproduced}`;
}

/** A runner failure ends verification: the event, and a result the loop turns into a stopped task. */
async function infrastructureStop(input: VerifyInput, diff: string, tests: TestReport): Promise<VerifyResult | undefined> {
  // A cancel kills the run: nothing about the tests or their runner is recorded from it.
  if (input.signal.aborted) return { verified: false, diff, tests, feedback: 'The verification was stopped: the task was cancelled.' };
  if (!tests.infrastructure) {
    await input.events.append({ type: 'tests.finished', data: testsFinishedData(tests) });
    return undefined;
  }
  await input.events.append({ type: 'tests.runner_failed', data: runnerFailedData(tests.infrastructure) });
  return { verified: false, diff, tests, infrastructure: tests.infrastructure, feedback: `Finish could not be verified: ${describeInfrastructure(tests.infrastructure)}` };
}

/**
 * The full suite (or the recipe's pre-PR command) once before a PR. Skipped when the selected run
 * already was the whole command and there is no separate pre-PR command. A run of the test
 * command counts only when it ran tests, as many as at the base (`ranTooFew`).
 */
async function fullSuite(input: VerifyInput, diff: string, selected: TestReport): Promise<VerifyResult> {
  const prePr = input.sandbox.environment?.prePr;
  if (selected.wholeCommand && !prePr) return (await ranTooFew(input, diff, selected)) ?? reproducingRan(input, diff, selected, [selected]);
  const full = await input.feedback.runTests(input.sandbox, { scope: 'full', prePr: true, signal: input.signal, ...reproducingOption(input) });
  const stopped = await infrastructureStop(input, diff, full);
  if (stopped) return stopped;
  if (!full.ok) return fullSuiteRefusal(diff, full);
  const runs = [selected, full];
  if (!prePr) return (await ranTooFew(input, diff, full)) ?? reproducingRan(input, diff, full, runs);
  // A pre-PR command that ran none of the reproducing tests, or no test at all (a lint-only `prePr`): the test command itself, once.
  if (unrun(input, runs).length > 0 || full.ran === 0) {
    const suite = await input.feedback.runTests(input.sandbox, { scope: 'full', signal: input.signal, ...reproducingOption(input) });
    const suiteStopped = await infrastructureStop(input, diff, suite);
    if (suiteStopped) return suiteStopped;
    if (!suite.ok) return fullSuiteRefusal(diff, suite);
    const few = await ranTooFew(input, diff, suite);
    if (few) return few;
    runs.push(suite);
  }
  return reproducingRan(input, diff, full, runs);
}

/**
 * A run of the whole test command is a verification only when it ran tests, at least as many as
 * the suite ran at the base commit (pytest stops at a collection error and runs nothing; every
 * failure it reports is then pre-existing, and "0 passed" would pass). Fewer than at the base: the
 * change stopped them, and the model is told. None where the base ran none either (or the base is
 * not known): the suite does not run in this sandbox, which no change fixes — infrastructure.
 * A command that gives no count (`ran` absent) is not judged. A ticket that allows test edits
 * may leave fewer tests than the base when its diff changes test files.
 */
async function ranTooFew(input: VerifyInput, diff: string, tests: TestReport): Promise<VerifyResult | undefined> {
  const ran = tests.ran;
  const base = input.baselineRan;
  if (ran === undefined || (ran > 0 && (base === undefined || ran >= base))) return undefined;
  const unloaded = tests.cases.filter((testCase) => testCase.kind === 'load_error');
  const listed = unloaded.slice(0, 5).map((testCase) => `${testCase.id}${testCase.message ? ` (${testCase.message})` : ''}`);
  const why = unloaded.length > 0 ? `; ${unloaded.length} test file(s) could not be collected or loaded: ${listed.join('; ')}${unloaded.length > 5 ? '; …' : ''}` : '';
  // A ticket that asks for test changes may remove tests: fewer than at the base is then the
  // change the ticket asked for, as long as the diff touches test files and some tests still run.
  if (base !== undefined && ran < base && ran > 0 && input.allowTestEdits && changedPaths(diff).some(isTestPath)) return undefined;
  if (base !== undefined && ran < base) {
    return {
      verified: false,
      diff,
      tests,
      feedback:
        `Finish refused: the full suite ran ${ran} test(s), fewer than the ${base} it ran at the base commit${why}. ` +
        'A run that leaves tests out verifies nothing: make them run again (an import error at collection, a removed or skipped test), then call finish again.',
    };
  }
  const infrastructure: TestInfrastructure = {
    kind: 'no_tests',
    command: tests.command,
    message: `the test suite ran no test: \`${tests.command}\`${why}; ${base === undefined ? 'what it ran at the base commit is not known' : 'it ran none at the base commit either'}`,
    action:
      "This is not caused by the change: the repository's suite runs no test in the sandbox. Make it collect its tests there (a test dependency missing from the install, " +
      'a warnings filter that turns an import-time warning into an error), e.g. through `install` or `test` in `.dockhand/environment.yml`, then run `dockhand repo check <repo>`.',
    output: tests.output,
  };
  await input.events.append({ type: 'tests.runner_failed', data: runnerFailedData(infrastructure) });
  return { verified: false, diff, tests, infrastructure, feedback: `Finish could not be verified: ${describeInfrastructure(infrastructure)}` };
}

function reproducingOption(input: VerifyInput): { reproducing?: readonly string[] } {
  return input.reproducingTests && input.reproducingTests.length > 0 ? { reproducing: input.reproducingTests } : {};
}

/** Reproducing tests that no run of this verification ran (failing ones already made a run red). */
function unrun(input: VerifyInput, runs: TestReport[]): string[] {
  const unknown = new Set(input.unknownReproducingTests ?? []);
  return (input.reproducingTests ?? []).filter((test) => !unknown.has(test) && !runs.some((run) => run.reproducing?.some((outcome) => outcome.id === test && outcome.outcome !== 'not_run')));
}

/** Green only when every reproducing test ran (and so passed): a removed or renamed one does not count. */
function reproducingRan(input: VerifyInput, diff: string, tests: TestReport, runs: TestReport[]): VerifyResult {
  const missing = unrun(input, runs);
  if (missing.length === 0) return { verified: true, diff, tests, feedback: '' };
  return {
    verified: false,
    diff,
    tests,
    feedback:
      `Finish refused: the ticket's reproducing test${missing.length > 1 ? 's' : ''} ${missing.join(', ')} did not run in the full suite. ` +
      'It fails at the base commit and must pass with your change: keep it in the suite (restore it if you removed or renamed it), then call finish again.',
  };
}

function fullSuiteRefusal(diff: string, full: TestReport): VerifyResult {
  return {
    verified: false,
    diff,
    tests: full,
    feedback:
      'Finish refused: the selected tests pass, but the full suite the server runs once before a pull request has new failures.\n' +
      `${describeTestReport(full)}\nFix them (failures that are pre-existing at the base commit do not count, except the ticket's reproducing tests), then call finish again.`,
  };
}
