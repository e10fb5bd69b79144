import { z } from 'zod';

/*
 * What comes back on a pull request Dockhand opened (issue 26): comments and reviews, and the
 * checks on its commits. The server keeps them (server/src/forge/comments.ts, checks.ts) and
 * answers them at GET /v1/repos/:name/pulls/:number; VS Code's PR view lists them.
 */

export const REVIEW_VERDICTS = ['approve', 'request_changes'] as const;
export type ReviewVerdict = (typeof REVIEW_VERDICTS)[number];

export const PullRequestCommentSchema = z.object({
  id: z.number().int().min(1),
  repo: z.string(),
  number: z.number().int().min(1),
  author: z.string(),
  kind: z.enum(['comment', 'review']),
  /** As posted, with secrets masked. */
  body: z.string(),
  path: z.string().optional(),
  line: z.number().int().min(1).optional(),
  /** The diff hunk the line comment was made on, ending at its line. */
  hunk: z.string().optional(),
  verdict: z.enum(REVIEW_VERDICTS).optional(),
  inReplyTo: z.number().int().min(1).optional(),
  /** `allowed`: may start a round; `ignored`: recorded only; `bot`: the server's own replies and summaries. */
  steering: z.enum(['allowed', 'ignored', 'bot']),
  ignoredBecause: z.string().optional(),
  /** The body held content a renderer hides; the model gets it without. */
  hiddenContent: z.boolean().optional(),
  /** The PR's head when the comment was made. */
  headSha: z.string(),
  createdAt: z.string(),
  /** Set when a follow-up commit addressed it (the thread is resolved). */
  resolvedBy: z.string().optional(),
  /**
   * The forge's own id where the forge is not this store (GitHub: the review comment, issue comment
   * or review id), with which of those it is: a delivery seen twice, or by a webhook and a poll, is
   * one record; replies go to the thread it names.
   */
  forgeId: z.number().int().min(1).optional(),
  forgeKind: z.enum(['review_comment', 'issue_comment', 'review']).optional(),
});
export type PullRequestComment = z.infer<typeof PullRequestCommentSchema>;

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
  /** The forge's own id where the forge is not this store (a GitHub check run, suite, workflow run or commit status), with its kind. */
  forgeId: z.number().int().min(1).optional(),
  forgeKind: z.enum(['check_run', 'check_suite', 'workflow_run', 'status']).optional(),
});
export type PullRequestCheck = z.infer<typeof PullRequestCheckSchema>;

/** GET /v1/repos/:name/pulls/:number: the PR with its comments, reviews and the checks on its head. */
export const PullRequestView = z.object({
  pr: z.object({
    repo: z.string(),
    number: z.number(),
    url: z.string(),
    title: z.string(),
    branch: z.string(),
    base: z.string(),
    headSha: z.string(),
    state: z.enum(['open', 'merged', 'closed']),
  }),
  comments: z.array(PullRequestCommentSchema),
  checks: z.array(PullRequestCheckSchema),
});
export type PullRequestView = z.infer<typeof PullRequestView>;
