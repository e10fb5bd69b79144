import { authorOf, type GitHubFeedback, type RestUser } from './webhook';

export { checkRunFeedback, issueCommentFeedback, reviewCommentFeedback, type RestCheckRun, type RestIssueComment, type RestReviewComment } from './webhook';

/*
 * GitHub's REST answers as the same `GitHubFeedback` its webhook deliveries become (`webhook.ts`),
 * for the polling fallback: a PR's line comments, general comments and reviews, and the check runs
 * on a commit. Ids are GitHub's, so what a poll finds and what a delivery brought are one record
 * (`GitHubThreads.record`). The shapes below are the fields read, as GitHub's REST API names them.
 */

type Feedback = Exclude<GitHubFeedback, { kind: 'outcome' }>;

export interface RestReview {
  id: number;
  user: RestUser | null;
  author_association: string;
  /** APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING. */
  state: string;
  body: string;
  commit_id: string | null;
  submitted_at?: string;
}

const VERDICTS: Record<string, 'approve' | 'request_changes' | 'comment'> = { APPROVED: 'approve', CHANGES_REQUESTED: 'request_changes', COMMENTED: 'comment' };

/** Undefined for a review that is pending (not submitted) or dismissed. */
export function reviewFeedback(repo: string, number: number, review: RestReview): Feedback | undefined {
  const verdict = VERDICTS[review.state.toUpperCase()];
  if (!verdict || !review.submitted_at) return undefined;
  return { kind: 'review', repo, number, id: review.id, author: authorOf(review.user, review.author_association), verdict, body: review.body ?? '', commitSha: review.commit_id ?? '', createdAt: review.submitted_at };
}
