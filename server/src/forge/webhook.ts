import { Webhooks, type EmitterWebhookEvent } from '@octokit/webhooks';
import { DockhandError } from '../errors';
import { commitStatusFeedback } from './github-actions';
import type { PullRequestOutcome } from './types';

/*
 * GitHub webhooks through `@octokit/webhooks` (GitHub's own library): the signature over the raw
 * body is verified there (HMAC-SHA256 in `X-Hub-Signature-256`, constant-time), and each delivery
 * arrives as a typed event. The route (owned by the API layer) must hand over the raw request body
 * exactly as received; a re-serialised JSON body does not verify.
 *
 * What comes back to a PR, as `GitHubFeedback`: its end (pull_request closed: merged or not), a
 * comment on a line of its diff (pull_request_review_comment), a comment on the PR itself
 * (issue_comment on an issue that is a PR), a submitted review (pull_request_review), and a check
 * that finished on a commit (check_run, check_suite, workflow_run, and a commit `status` that is
 * no longer pending). Who wrote a comment goes with
 * GitHub's `author_association`; whether that person may steer is the follower's decision
 * (`steersByAssociation`). Every other event and action is acknowledged and ignored.
 */

export const SIGNATURE_HEADER = 'x-hub-signature-256';
export const EVENT_HEADER = 'x-github-event';
export const DELIVERY_HEADER = 'x-github-delivery';

export interface PullRequestWebhookOutcome extends PullRequestOutcome {
  repo: string;
  number: number;
  branch: string;
}

/** Who wrote it, as GitHub describes them relative to the repository. */
export interface GitHubAuthor {
  login: string;
  /** OWNER, MEMBER, COLLABORATOR, CONTRIBUTOR, FIRST_TIME_CONTRIBUTOR, FIRST_TIMER, MANNEQUIN, NONE. */
  association: string;
  /** The account is a bot (its own replies, another app). */
  bot: boolean;
}

export type GitHubFeedback =
  | ({ kind: 'outcome' } & PullRequestWebhookOutcome)
  | {
    kind: 'comment';
    repo: string;
    number: number;
    /** GitHub's id of the comment (a reply names its thread's first comment in `inReplyTo`). */
    id: number;
    author: GitHubAuthor;
    body: string;
    /** A line comment: the file, its line on the PR's head side, and the diff hunk ending there. */
    path?: string;
    line?: number;
    hunk?: string;
    inReplyTo?: number;
    /** The commit the comment was made on (line comments); the PR's head otherwise, unknown here. */
    commitSha?: string;
    createdAt: string;
  }
  | {
    kind: 'review';
    repo: string;
    number: number;
    id: number;
    author: GitHubAuthor;
    verdict: 'approve' | 'request_changes' | 'comment';
    body: string;
    commitSha: string;
    createdAt: string;
  }
  | {
    kind: 'check';
    repo: string;
    /** The PRs GitHub attached the run to (empty for a fork's PR and a commit status: found by the head commit). */
    numbers: number[];
    source: 'check_run' | 'check_suite' | 'workflow_run' | 'status';
    /** GitHub Actions ran it: its failed jobs' logs can be read (`github-actions.ts`). */
    fromActions?: boolean;
    id: number;
    name: string;
    headSha: string;
    /** success, failure, timed_out, cancelled, neutral, skipped, action_required, stale, startup_failure. */
    conclusion: string;
    /** Where its log is read (the run's page or its details URL). */
    url?: string;
    /** What the delivery says of its result (a check run's output title, summary and text, a status's description); an Actions job's log is read on recording. */
    log?: string;
    completedAt: string;
  };

/** GitHub's associations that may steer a PR's task (a repository's own list can add people). */
export const STEERING_ASSOCIATIONS = ['OWNER', 'MEMBER', 'COLLABORATOR'] as const;

export function steersByAssociation(author: GitHubAuthor, allowed: readonly string[] = []): boolean {
  if (author.bot) return false;
  return (STEERING_ASSOCIATIONS as readonly string[]).includes(author.association) || allowed.includes(author.login);
}

export interface WebhookRequest {
  /** Header names in lower case, as Node gives them. */
  headers: Record<string, string | string[] | undefined>;
  rawBody: string | Buffer;
}

function header(headers: WebhookRequest['headers'], name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** A comment on GitHub (REST answer or webhook payload, the same fields) as the feedback the follower records. */
type GitHubCommentFeedback = Extract<GitHubFeedback, { kind: 'comment' }>;

export interface RestUser {
  login: string;
  type?: string;
}

export function authorOf(user: RestUser | null | undefined, association: string): GitHubAuthor {
  return { login: user?.login ?? 'ghost', association, bot: user?.type === 'Bot' };
}

export interface RestReviewComment {
  id: number;
  user: RestUser | null;
  author_association: string;
  body: string;
  path: string;
  line?: number | null;
  original_line?: number | null;
  diff_hunk: string;
  in_reply_to_id?: number;
  commit_id: string;
  created_at: string;
}

export function reviewCommentFeedback(repo: string, number: number, comment: RestReviewComment): GitHubCommentFeedback {
  const line = comment.line ?? comment.original_line ?? headLineOfHunk(comment.diff_hunk);
  return {
    kind: 'comment',
    repo,
    number,
    id: comment.id,
    author: authorOf(comment.user, comment.author_association),
    body: comment.body,
    path: comment.path,
    ...(line ? { line } : {}),
    hunk: comment.diff_hunk,
    ...(comment.in_reply_to_id ? { inReplyTo: comment.in_reply_to_id } : {}),
    commitSha: comment.commit_id,
    createdAt: comment.created_at,
  };
}

export interface RestIssueComment {
  id: number;
  user: RestUser | null;
  author_association: string;
  body?: string;
  created_at: string;
}

export function issueCommentFeedback(repo: string, number: number, comment: RestIssueComment): GitHubCommentFeedback {
  return { kind: 'comment', repo, number, id: comment.id, author: authorOf(comment.user, comment.author_association), body: comment.body ?? '', createdAt: comment.created_at };
}

export interface RestCheckRun {
  id: number;
  name: string;
  head_sha: string;
  status: string;
  conclusion: string | null;
  details_url?: string | null;
  html_url?: string | null;
  completed_at: string | null;
  output: { title: string | null; summary: string | null; text?: string | null };
  pull_requests: Array<{ number: number }>;
  app?: { slug?: string } | null;
}

const ACTIONS_APP = 'github-actions';

/** Undefined while the run has not completed. */
export function checkRunFeedback(repo: string, run: RestCheckRun): Extract<GitHubFeedback, { kind: 'check' }> | undefined {
  if (run.status !== 'completed') return undefined;
  const url = run.details_url ?? run.html_url;
  return {
    kind: 'check',
    repo,
    numbers: run.pull_requests.map((pull) => pull.number),
    source: 'check_run',
    id: run.id,
    name: run.name,
    headSha: run.head_sha,
    conclusion: run.conclusion ?? 'neutral',
    ...(run.app?.slug === ACTIONS_APP ? { fromActions: true } : {}),
    ...(url ? { url } : {}),
    log: [run.output.title, run.output.summary, run.output.text].filter((part): part is string => typeof part === 'string' && part !== '').join('\n'),
    completedAt: run.completed_at ?? new Date().toISOString(),
  };
}


/** The head-side line a diff hunk ends at (a line comment's line); undefined when it ends on a removed line. */
export function headLineOfHunk(hunk: string): number | undefined {
  const lines = hunk.split('\n');
  const start = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(lines[0] ?? '');
  if (!start) return undefined;
  let next = Number(start[1]);
  let last: number | undefined;
  for (const line of lines.slice(1)) {
    if (line.startsWith('-')) last = undefined;
    else {
      last = next;
      next += 1;
    }
  }
  return last;
}

const VERDICTS: Record<string, 'approve' | 'request_changes' | 'comment'> = { approved: 'approve', changes_requested: 'request_changes', commented: 'comment' };

/**
 * One receiver per webhook secret. `receive` verifies a delivery and returns what it says about
 * PRs (none for events and actions Dockhand ignores); a bad signature is `unauthenticated`, a
 * body that is not JSON, or not the shape of the event it is named as, is `bad_request`.
 */
export class GitHubWebhookReceiver {
  private readonly webhooks: Webhooks;
  /** The feedback of the delivery being received (handlers run within one `receive`). */
  private readonly collected = new Map<string, GitHubFeedback[]>();

  constructor(secret: string) {
    if (!secret) throw new DockhandError('internal', 'a GitHub webhook receiver needs its secret (forge.webhookSecret)');
    this.webhooks = new Webhooks({ secret });
    const add = (id: string, feedback: GitHubFeedback) => this.collected.get(id)?.push(feedback);

    this.webhooks.on('pull_request.closed', ({ id, payload }) => {
      const pull = payload.pull_request;
      const merged = pull.merged === true || Boolean(pull.merged_at);
      add(id, {
        kind: 'outcome',
        repo: payload.repository.full_name,
        number: payload.number,
        branch: pull.head.ref,
        outcome: merged ? 'merged' : 'closed',
        at: (merged ? pull.merged_at : pull.closed_at) ?? pull.closed_at ?? new Date().toISOString(),
      });
    });
    this.webhooks.on('pull_request_review_comment.created', ({ id, payload }) => {
      // The delivery's comment has the fields of the REST answer a poll reads: one mapping.
      add(id, reviewCommentFeedback(payload.repository.full_name, payload.pull_request.number, payload.comment));
    });
    this.webhooks.on('issue_comment.created', ({ id, payload }) => {
      // An issue comment is a PR's general comment only when the issue is a pull request.
      if (!payload.issue.pull_request) return;
      add(id, issueCommentFeedback(payload.repository.full_name, payload.issue.number, payload.comment));
    });
    this.webhooks.on('pull_request_review.submitted', ({ id, payload }) => {
      const { review } = payload;
      const verdict = VERDICTS[review.state.toLowerCase()];
      if (!verdict) return;
      add(id, {
        kind: 'review',
        repo: payload.repository.full_name,
        number: payload.pull_request.number,
        id: review.id,
        author: authorOf(review.user, review.author_association),
        verdict,
        body: review.body ?? '',
        commitSha: review.commit_id,
        createdAt: review.submitted_at ?? new Date().toISOString(),
      });
    });
    this.webhooks.on('check_run.completed', ({ id, payload }) => {
      // The delivery's check run has the fields of the REST answer a poll reads: one mapping.
      const feedback = checkRunFeedback(payload.repository.full_name, payload.check_run);
      if (feedback) add(id, feedback);
    });
    this.webhooks.on('check_suite.completed', ({ id, payload }) => {
      const suite = payload.check_suite;
      add(id, {
        kind: 'check',
        repo: payload.repository.full_name,
        numbers: suite.pull_requests.map((pull) => pull.number),
        source: 'check_suite',
        ...(suite.app?.slug === ACTIONS_APP ? { fromActions: true } : {}),
        id: suite.id,
        name: suite.app?.name ?? 'check suite',
        headSha: suite.head_sha,
        conclusion: suite.conclusion ?? 'neutral',
        completedAt: suite.updated_at ?? new Date().toISOString(),
      });
    });
    this.webhooks.on('workflow_run.completed', ({ id, payload }) => {
      const run = payload.workflow_run;
      add(id, {
        kind: 'check',
        repo: payload.repository.full_name,
        numbers: (run.pull_requests ?? []).flatMap((pull) => (pull ? [pull.number] : [])),
        source: 'workflow_run',
        fromActions: true,
        id: run.id,
        name: run.name ?? payload.workflow?.name ?? 'workflow',
        headSha: run.head_sha,
        conclusion: run.conclusion ?? 'neutral',
        url: run.html_url,
        completedAt: run.updated_at,
      });
    });
    this.webhooks.on('status', ({ id, payload }) => {
      // A status names no PR: the sink keeps it when its repository has a followed PR, by commit.
      const feedback = commitStatusFeedback(payload.repository.full_name, payload.sha, payload);
      if (feedback) add(id, feedback);
    });
  }

  async receive(request: WebhookRequest): Promise<GitHubFeedback[]> {
    const body = request.rawBody.toString();
    const signature = header(request.headers, SIGNATURE_HEADER);
    const verified = signature !== undefined && (await this.webhooks.verify(body, signature).catch(() => false));
    if (!verified) {
      throw new DockhandError('unauthenticated', 'webhook signature does not match', {
        hint: `check the webhook secret; GitHub signs the raw body in ${SIGNATURE_HEADER}`,
      });
    }
    let payload: unknown;
    try {
      payload = JSON.parse(body);
    } catch (error) {
      throw new DockhandError('bad_request', 'webhook body is not JSON', { cause: error });
    }
    const name = header(request.headers, EVENT_HEADER) ?? '';
    if (name === 'ping') return [];
    const id = `${header(request.headers, DELIVERY_HEADER) ?? 'delivery'}:${Math.random().toString(36).slice(2)}`;
    this.collected.set(id, []);
    try {
      await this.webhooks.receive({ id, name, payload } as EmitterWebhookEvent);
      return this.collected.get(id) ?? [];
    } catch (error) {
      // A payload that is not the event's shape (a handler read a field that is not there).
      throw new DockhandError('bad_request', `webhook ${name}: the payload is not a ${name} event (${error instanceof Error ? error.message : String(error)})`, { cause: error });
    } finally {
      this.collected.delete(id);
    }
  }
}
