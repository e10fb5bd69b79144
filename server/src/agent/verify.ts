import type { Ticket } from '@dockhand/protocol';
import type { FeedbackEngine, TestReport } from '../feedback/types';
import type { ModelClient } from '../model/types';
import type { Sandbox } from '../sandbox/types';
import { recordModelTurn } from './model-turn';
import type { EventSink } from './ports';
import { buildReviewRequest, reviewVerdictOf, type ReviewVerdict } from './review';
import { describeTestReport, testsFinishedData } from './tools/run-tests';
import { isCiConfigPath, isTestPath } from './tools/paths';

/*
 * The verified stop. "Done" is never the model's word alone: when it calls finish, the server
 * checks the diff itself, runs the tests (scope 'selected'; the caller may run 'full' after) and
 * asks a reviewer model for a structured verdict. Anything short of green tests and an approving
 * review goes back to the model as the finish call's error result.
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
}

export interface VerifyResult {
  verified: boolean;
  /** What the model reads: why the finish was refused, or confirmation. */
  feedback: string;
  diff: string;
  tests?: TestReport;
  review?: ReviewVerdict;
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

  const tests = await input.feedback.runTests(input.sandbox, { scope: 'selected', signal: input.signal });
  await input.events.append({ type: 'tests.finished', data: testsFinishedData(tests) });
  if (!tests.ok) {
    return {
      verified: false,
      diff,
      tests,
      feedback: `Finish refused: the server ran the tests and they are red.\n${describeTestReport(tests)}\nFix the failures, then call finish again.`,
    };
  }
  if (!input.review) {
    return { verified: true, diff, tests, feedback: `Verified: ${tests.passed} tests passed. Review skipped by configuration.` };
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
  return {
    verified: true,
    diff,
    tests,
    review: verdict,
    feedback: `Verified: ${tests.passed} tests passed and the review approved the change.`,
  };
}
