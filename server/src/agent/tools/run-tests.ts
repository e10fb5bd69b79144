import { z } from 'zod';
import type { BaselineResult, ReproducingSelection, TestInfrastructure, TestReport, TestStepOutcome } from '../../feedback/types';
import { defineTool } from './types';

const RunTestsInput = z.object({
  scope: z
    .enum(['selected', 'full'])
    .default('selected')
    .describe('selected: tests affected by your changes (fast); full: the whole suite'),
});

/** What the model reads when the runner itself failed: not a red test, not its to fix. */
export function describeInfrastructure(infrastructure: TestInfrastructure): string {
  return `${infrastructure.message} — this is not caused by your change; do not try to fix it. The test results are unknown.`;
}

/** The compact text the model reads for a test run (also used by the verified stop). */
export function describeTestReport(report: TestReport): string {
  if (report.infrastructure) return describeInfrastructure(report.infrastructure);
  const verdict = report.ok && report.failed === 0 ? 'PASSED' : 'FAILED';
  const lines = [
    `Tests ${verdict}: ${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped (${report.scope}: ${report.selectionReason}).`,
    `Command: ${report.command}`,
  ];
  const preExisting = report.preExisting ?? [];
  if (preExisting.length > 0) {
    const all = preExisting.length === report.failed ? 'All of the failing tests' : `${preExisting.length} of the failing tests`;
    lines.push(
      `${all} already fail at the base commit, before any change (pre-existing; they do not block finishing, ` +
        `but they are yours to fix if the ticket is about them): ${preExisting.join(', ')}`,
    );
  }
  const stillFailing = (report.reproducing ?? []).filter((test) => test.outcome === 'failed').map((test) => test.id);
  if (stillFailing.length > 0) {
    lines.push(
      stillFailing.length > 1
        ? `The ticket's reproducing tests still fail: ${stillFailing.join(', ')} (they fail at the base commit too, but this ticket is about them: they must pass before you can finish).`
        : `The ticket's reproducing test ${stillFailing[0]} still fails (it fails at the base commit too, but this ticket is about it: it must pass before you can finish).`,
    );
  }
  if (report.quarantined.length > 0) lines.push(`Quarantined as flaky (not counted): ${report.quarantined.join(', ')}`);
  if (report.judged === false) lines.push(describeUnjudged(report));
  if (report.output.trim()) lines.push(report.output.trim());
  return lines.join('\n');
}

/** The note that names the task's reproducing tests (after the baseline, in the model's first message). */
export function describeReproducing(selection: ReproducingSelection): string {
  const lines: string[] = [];
  const known = selection.tests.filter((test) => !selection.unknown.includes(test));
  if (known.length > 0) {
    const named = known.map((test) => `${test} (${selection.from[test] === 'explicit' ? 'named for this task' : 'named in the ticket'})`);
    lines.push(`Reproducing tests: ${named.join(', ')}. They must pass before you can finish, although they fail at the base commit.`);
  }
  if (selection.unknown.length > 0) {
    lines.push(`Not in the suite at the base commit (checked if they appear, e.g. a test you add): ${selection.unknown.join(', ')}.`);
  }
  return lines.join(' ');
}

/** The baseline note in the trajectory (and the model's first message). */
export function describeBaseline(baseline: BaselineResult): string {
  const flaky = baseline.flaky.length > 0 ? ` Flaky there (quarantined, not counted): ${baseline.flaky.join(', ')}.` : '';
  const failing =
    baseline.preExistingFailures.length > 0
      ? ` Pre-existing failures (they fail before any change; they do not block finishing, but fix them if the ticket is about them): ${baseline.preExistingFailures.join(', ')}.`
      : '';
  return `Baseline: the server ran the repository's tests at the base commit twice (\`${baseline.command}\`): ${baseline.passed} passed, ${baseline.failed} failed.${failing}${flaky}`;
}

export const runTestsTool = defineTool({
  name: 'run_tests',
  description:
    "Run the repository's tests. scope 'selected' runs the tests affected by your changes; 'full' runs the whole " +
    'suite. Returns pass/fail counts and the output of failing tests.',
  input: RunTestsInput,
  async run(input, { sandbox, signal, feedback, events, reproducingTests }) {
    const report = await feedback.runTests(sandbox, { scope: input.scope, signal, ...(reproducingTests?.length ? { reproducing: reproducingTests } : {}) });
    // Cancelled while the tests ran: the runner was killed by us (exit 137), which says nothing
    // about the runner or the change — no "runner crashed, often out of memory", no red run.
    if (signal.aborted) return { output: 'The test run was stopped: the task was cancelled.', isError: true };
    if (report.infrastructure) {
      await events.append({ type: 'tests.runner_failed', data: runnerFailedData(report.infrastructure) });
      return { output: describeTestReport(report), isError: true };
    }
    await events.append({ type: 'tests.finished', data: testsFinishedData(report) });
    // Red tests are information, not a tool failure: the call itself worked.
    return { output: describeTestReport(report), isError: false };
  },
});

export function runnerFailedData(infrastructure: TestInfrastructure) {
  return { command: infrastructure.command, kind: infrastructure.kind, message: infrastructure.message, output: infrastructure.output };
}

export function testsFinishedData(report: TestReport) {
  return {
    command: report.command,
    scope: report.scope,
    passed: report.passed,
    failed: report.failed,
    skipped: report.skipped,
    ok: report.ok,
    selectionReason: report.selectionReason,
    quarantined: report.quarantined,
    ...(report.preExisting && report.preExisting.length > 0 ? { preExisting: report.preExisting } : {}),
    ...(report.reproducing && report.reproducing.length > 0 ? { reproducing: report.reproducing } : {}),
    output: report.output,
    durationMs: report.durationMs,
    ...(report.steps && report.steps.length > 0 ? { steps: report.steps.map(stepData) } : {}),
    ...(report.judged === false ? { judged: false } : {}),
  };
}

/** A step for the event: a selection's command line cut to its start (the files it names tell nothing of why it failed). */
function stepData(step: TestStepOutcome) {
  const name = step.name.length > 200 ? `${step.name.slice(0, 160)} … (${step.name.length} characters)` : step.name;
  return {
    name,
    counted: step.counted,
    ...(step.judgement ? { judgement: step.judgement } : {}),
    exitCode: step.exitCode,
    passed: step.passed,
    failed: step.failed,
    ...(step.tail ? { tail: step.tail } : {}),
  };
}

/** What the model and the review read when no step of a run could judge the change. */
export function describeUnjudged(report: TestReport): string {
  const steps = (report.steps ?? []).filter((step) => step.judgement === 'cannot judge').map((step) => `\`${step.key ?? step.name}\``);
  return (
    `No step of the test command can judge this change: ${steps.length > 0 ? `${steps.join(', ')} ${steps.length > 1 ? 'are' : 'is'} counted by exit status alone and failed at the base commit` : 'no step counted a test'}, ` +
    'so its result is neither a reason to refuse nor evidence that the change works. The change is unverified by tests.'
  );
}
