import { z } from 'zod';
import { HeadAndTail } from '../head-and-tail';

/**
 * Checks on a commit, as a forge has them (GitHub's check runs): a name, a conclusion and a log.
 * On the local forge they are posted with `dockhand pr check` (an outside CI's result) and kept in
 * the store, per repository and commit. A red one on a followed PR's head is triaged
 * (`followup/triage.ts`) before any round.
 */

/** GitHub's check-run conclusions that a follow-up tells apart. */
export const CHECK_CONCLUSIONS = ['success', 'failure', 'timed_out', 'cancelled', 'neutral', 'skipped'] as const;
export type CheckConclusion = (typeof CHECK_CONCLUSIONS)[number];

export const PullRequestCheckSchema = z.object({
  id: z.number().int().min(1),
  repo: z.string(),
  sha: z.string(),
  name: z.string().min(1).max(200),
  conclusion: z.enum(CHECK_CONCLUSIONS),
  /** Trimmed head and tail, secrets masked. */
  log: z.string(),
  /** Who posted it (a user name; `dockhand` for the server's own runs). */
  postedBy: z.string(),
  createdAt: z.string(),
  /** The forge's own id where the forge is not this store (a GitHub check run, suite or workflow run), with its kind. */
  forgeId: z.number().int().min(1).optional(),
  forgeKind: z.enum(['check_run', 'check_suite', 'workflow_run']).optional(),
});
export type PullRequestCheck = z.infer<typeof PullRequestCheckSchema>;
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
