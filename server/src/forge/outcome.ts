import type { NewEvent } from '@dockhand/protocol';
import { prOutcomeEvent } from './deliver';
import { isOutcomeFinal, type Forge, type OutcomeOptions, type PullRequestOutcome } from './types';

/**
 * One poll of a PR's outcome for the tracker (merge rate, 14-day revert rate). Returns the
 * `pr.outcome` event to append when the outcome changed since `previous`, and whether polling can
 * stop. A merged PR keeps being polled until its revert window has passed.
 */
export interface OutcomePoll {
  outcome: PullRequestOutcome | undefined;
  /** Set when the outcome differs from `previous`. */
  event?: NewEvent;
  final: boolean;
}

export async function pollOutcome(
  forge: Forge,
  pr: { repo: string; number: number },
  previous: PullRequestOutcome['outcome'] | undefined,
  options: OutcomeOptions = {},
): Promise<OutcomePoll> {
  const outcome = await forge.getOutcome(pr.repo, pr.number, options);
  const poll: OutcomePoll = { outcome, final: isOutcomeFinal(outcome, options) };
  if (outcome && outcome.outcome !== previous) poll.event = prOutcomeEvent(outcome);
  return poll;
}
