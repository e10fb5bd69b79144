import { z } from 'zod';
import { HeadAndTail } from '../head-and-tail';

/**
 * Checks on a commit, as a forge has them (GitHub's check runs): a name, a conclusion and a log.
 * On the local forge they are posted with `dockhand pr check` (an outside CI's result) and kept in
 * the store, per repository and commit. A red one on a followed PR's head is triaged
 * (`followup/triage.ts`) before any round.
 */

import { CHECK_CONCLUSIONS, PullRequestCheckSchema, type CheckConclusion, type PullRequestCheck } from '@dockhand/protocol';

export { CHECK_CONCLUSIONS, PullRequestCheckSchema, type CheckConclusion, type PullRequestCheck };

export type NewPullRequestCheck = Omit<PullRequestCheck, 'id'>;

/** Is the check red? `neutral` and `skipped` are not. */
export function isRed(conclusion: CheckConclusion): boolean {
  return conclusion === 'failure' || conclusion === 'timed_out' || conclusion === 'cancelled';
}

/** The latest result of each check name (a re-run replaces its earlier result). */
export function latestChecks(checks: readonly PullRequestCheck[]): PullRequestCheck[] {
  const byName = new Map<string, PullRequestCheck>();
  for (const check of [...checks].sort((a, b) => a.id - b.id)) byName.set(check.name, check);
  return [...byName.values()];
}

/** Characters of a check's log kept from its start and its end. */
export const CHECK_LOG_HEAD = 4_000;
export const CHECK_LOG_TAIL = 12_000;

/** A CI log trimmed as every long output is (head and tail, the cut counted). */
export function trimCheckLog(log: string, head = CHECK_LOG_HEAD, tail = CHECK_LOG_TAIL): string {
  const kept = new HeadAndTail<string>({ head, tail, slice: (chunk, start, end) => chunk.slice(start, end) });
  kept.push(log);
  if (kept.dropped === 0) return log;
  return `${kept.head.join('')}\n[… ${kept.dropped} characters of the log cut …]\n${kept.tail.join('')}`;
}
