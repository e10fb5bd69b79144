import { hasHiddenContent } from '../policy/neutralise';
import { maskSecrets } from '../policy/mask';
import { isRed, trimCheckLog, latestChecks, type CheckConclusion, type PullRequestCheck } from './checks';
import { BOT_AUTHOR, type FollowedThreads, type PullRequestComment, type PullRequestThreadStore } from './comments';
import type { GitHubForge } from './github-forge';
import { KeyedQueue } from '../keyed-queue';
import type { Logger } from '../log';
import type { PullRequest } from './types';
import { steersByAssociation, STEERING_ASSOCIATIONS, type GitHubFeedback } from './webhook';

/*
 * A GitHub PR's threads as the PR follower reads them: what GitHub said about the PR (webhook
 * deliveries, or the polling fallback) is recorded in the fleet's store, the same `pr_comments` /
 * `pr_checks` records the local forge keeps, with GitHub's id (`forgeId`), so a delivery GitHub
 * retries, or one a poll also finds, is one record. Whether a comment steers is decided here, once,
 * from GitHub's `author_association` (OWNER, MEMBER, COLLABORATOR, or a login on the repository's
 * own list); anyone else's comment is recorded as ignored and never reaches the model. Text is
 * masked as a ticket's is before it is stored.
 *
 * The server's own replies go to GitHub (a reply in a line comment's thread, else a PR comment)
 * and are recorded as `bot` with the id GitHub gave them, under the PR's queue: the delivery of
 * that same comment, which may arrive before the REST answer, waits and is found to be known.
 * A line comment's thread a round addressed is resolved on GitHub through GraphQL
 * (`github-review-threads.ts`); a token that may not is logged and the thread left open.
 */

export type GitHubThreadsForge = Pick<GitHubForge, 'getPullRequest' | 'commentOnPullRequest' | 'replyToReviewComment'> & Partial<Pick<GitHubForge, 'failedJobsLog' | 'resolveReviewThread' | 'pullRequestFeedback' | 'viewerLogin'>>;

export interface GitHubThreadsOptions {
  forge: GitHubThreadsForge;
  store: PullRequestThreadStore;
  /** Secrets the server holds: masked in every stored text. */
  known?: readonly string[];
  /** Logins a repository lets steer besides GitHub's steering associations. */
  allowed?: (repo: string) => Promise<readonly string[]>;
  now?: () => Date;
  logger?: Logger;
}

type Delivered = Exclude<GitHubFeedback, { kind: 'outcome' }>;

/** GitHub's check conclusions as the follower tells them apart; a run that asks for action or went stale is not red. */
export function checkConclusion(conclusion: string): CheckConclusion {
  switch (conclusion) {
    case 'success':
    case 'failure':
    case 'timed_out':
    case 'cancelled':
    case 'neutral':
    case 'skipped':
      return conclusion;
    // The job never started its steps: a runner's failure, as a cancelled job is.
    case 'startup_failure':
      return 'cancelled';
    default:
      return 'neutral';
  }
}

export class GitHubThreads implements FollowedThreads {
  private readonly queue = new KeyedQueue();
  private readonly now: () => Date;

  constructor(private readonly options: GitHubThreadsOptions) {
    this.now = options.now ?? (() => new Date());
  }

  private mask(text: string): string {
    return maskSecrets(text, { known: this.options.known ?? [] });
  }

  /**
   * Records a comment, review or finished check GitHub reported; undefined when it was already
   * recorded, or says nothing the follower acts on (a review with neither a verdict nor text).
   */
  async record(feedback: Delivered): Promise<PullRequestComment | PullRequestCheck | undefined> {
    if (feedback.kind === 'check') return this.recordCheck(feedback);
    return this.queue.run(`${feedback.repo}#${feedback.number}`, async () => {
      const forgeKind = feedback.kind === 'review' ? 'review' : feedback.path !== undefined ? 'review_comment' : 'issue_comment';
      const known = await this.options.store.listComments(feedback.repo, feedback.number);
      if (known.some((comment) => comment.forgeId === feedback.id && comment.forgeKind === forgeKind)) return undefined;
      // A review that only wraps line comments (state `commented`, no text) says nothing of its own.
      if (feedback.kind === 'review' && feedback.verdict === 'comment' && feedback.body.trim() === '') return undefined;
      const allowed = (await this.options.allowed?.(feedback.repo)) ?? [];
      const steers = steersByAssociation(feedback.author, allowed);
      const why = feedback.author.bot
        ? `${feedback.author.login} is a bot account`
        : `${feedback.author.login} is ${feedback.author.association} on ${feedback.repo}; only ${STEERING_ASSOCIATIONS.join(', ')}${allowed.length ? ' or the repository\'s listed logins' : ''} may steer`;
      const kind = feedback.kind === 'review' && feedback.verdict !== 'comment' ? 'review' : 'comment';
      return this.options.store.addComment({
        repo: feedback.repo,
        number: feedback.number,
        author: feedback.author.login,
        kind,
        body: this.mask(feedback.body),
        // A comment on a removed line has its file and hunk but no line on the head side.
        ...(feedback.kind === 'comment' && feedback.path !== undefined ? { path: feedback.path, ...(feedback.line !== undefined ? { line: feedback.line } : {}), ...(feedback.hunk ? { hunk: feedback.hunk } : {}) } : {}),
        ...(feedback.kind === 'review' && feedback.verdict !== 'comment' ? { verdict: feedback.verdict } : {}),
        ...(feedback.kind === 'comment' && feedback.inReplyTo !== undefined ? await this.inReplyTo(known, feedback.inReplyTo) : {}),
        steering: steers ? 'allowed' : 'ignored',
        ...(steers ? {} : { ignoredBecause: why }),
        ...(hasHiddenContent(feedback.body) ? { hiddenContent: true } : {}),
        headSha: feedback.commitSha ?? '',
        createdAt: feedback.createdAt,
        forgeId: feedback.id,
        forgeKind,
      });
    });
  }

  /** A reply names the store id of its thread's first comment when that comment is recorded. */
  private async inReplyTo(known: readonly PullRequestComment[], forgeId: number): Promise<{ inReplyTo?: number }> {
    const parent = known.find((comment) => comment.forgeId === forgeId && comment.forgeKind === 'review_comment');
    return parent ? { inReplyTo: parent.id } : {};
  }

  private async recordCheck(feedback: Extract<Delivered, { kind: 'check' }>): Promise<PullRequestCheck | undefined> {
    return this.queue.run(`${feedback.repo}@${feedback.headSha}`, async () => {
      const known = await this.options.store.listChecks(feedback.repo, feedback.headSha);
      if (known.some((check) => check.forgeId === feedback.id && check.forgeKind === feedback.source)) return undefined;
      const where = feedback.url ? `\nDetails: ${feedback.url}` : '';
      let conclusion = checkConclusion(feedback.conclusion);
      let jobs = '';
      // A red Actions run: its failed jobs' logs are what triage reads (test names, a runner lost, a timeout).
      if (isRed(conclusion) && this.options.forge.failedJobsLog) {
        const read = await this.options.forge.failedJobsLog(feedback.repo, feedback).catch((error: unknown) => ({ log: `(the failed jobs' logs could not be read: ${error instanceof Error ? error.message : String(error)})` }));
        if (read) {
          jobs = `\n\n${read.log}`;
          if ('conclusion' in read && read.conclusion) conclusion = read.conclusion;
        }
      }
      return this.options.store.addCheck({
        repo: feedback.repo,
        sha: feedback.headSha,
        name: feedback.name.slice(0, 200) || feedback.source,
        conclusion,
        log: this.mask(trimCheckLog(`${feedback.log ?? ''}${where}${jobs}`.trim())),
        postedBy: 'github',
        createdAt: feedback.completedAt,
        forgeId: feedback.id,
        forgeKind: feedback.source,
      });
    });
  }

  async view(repo: string, number: number): Promise<{ pr: PullRequest; comments: PullRequestComment[]; checks: PullRequestCheck[] }> {
    const pr = await this.options.forge.getPullRequest(repo, number);
    const [comments, checks] = await Promise.all([this.options.store.listComments(pr.repo, number), this.options.store.listChecks(pr.repo, pr.headSha)]);
    return { pr, comments, checks: latestChecks(checks) };
  }

  async resolveThread(pr: PullRequest, id: number): Promise<void> {
    const resolve = this.options.forge.resolveReviewThread;
    if (!resolve) return;
    const comment = (await this.options.store.listComments(pr.repo, pr.number)).find((candidate) => candidate.id === id);
    // Only a line comment has a thread on GitHub: a PR comment or a review has nothing to resolve.
    if (comment?.forgeKind !== 'review_comment' || comment.forgeId === undefined) return;
    const where = { repo: pr.repo, number: pr.number, commentId: comment.forgeId };
    try {
      const result = await resolve.call(this.options.forge, pr.repo, pr.number, comment.forgeId);
      if (result.outcome === 'forbidden') this.options.logger?.warn({ ...where, reason: result.reason }, 'not resolving the review thread on GitHub: the token may not (skipped)');
      else if (result.outcome === 'not_found') this.options.logger?.info(where, 'no review thread on GitHub holds the comment (deleted?); nothing resolved');
      else this.options.logger?.info({ ...where, threadId: result.threadId, outcome: result.outcome }, 'review thread resolved on GitHub');
    } catch (error) {
      this.options.logger?.warn({ ...where, err: error }, 'resolving the review thread on GitHub failed; it stays open');
    }
  }

  async reply(pr: PullRequest, body: string, inReplyTo?: number): Promise<PullRequestComment> {
    return this.queue.run(`${pr.repo}#${pr.number}`, () => this.post(pr, body, inReplyTo));
  }

  /**
   * A reply posted at most once per `key`, across a crash between GitHub's answer and the store's
   * record of it: the body carries `<!-- dockhand:KEY -->` (hidden on GitHub), and before posting
   * the store, then the PR's comments on GitHub, are searched for it. A comment found on GitHub
   * counts only when the server's own account wrote it (GraphQL's `viewer`; where that cannot be
   * read, a bot account), so nobody can silence a reply by quoting its marker. Found there, it is
   * recorded (as `bot`, unless a delivery already recorded it) and nothing is posted.
   */
  async replyOnce(pr: PullRequest, body: string, key: string, inReplyTo?: number): Promise<PullRequestComment> {
    const marker = replyMarker(key);
    return this.queue.run(`${pr.repo}#${pr.number}`, async () => {
      const known = await this.options.store.listComments(pr.repo, pr.number);
      const stored = known.find((comment) => comment.steering === 'bot' && comment.body.includes(marker));
      if (stored) return stored;
      const found = await this.postedOnGitHub(pr, marker);
      if (found) {
        const kind = found.path !== undefined ? 'review_comment' : 'issue_comment';
        const echoed = known.find((comment) => comment.forgeId === found.id && comment.forgeKind === kind);
        this.options.logger?.info({ repo: pr.repo, number: pr.number, key, commentId: found.id }, 'the reply was already on GitHub (posted before a crash); not posting it again');
        return echoed ?? this.options.store.addComment({
          repo: pr.repo, number: pr.number, author: BOT_AUTHOR, kind: 'comment', body: this.mask(found.body),
          ...(inReplyTo !== undefined ? { inReplyTo } : {}),
          steering: 'bot', headSha: pr.headSha, createdAt: found.createdAt, forgeId: found.id, forgeKind: kind,
        });
      }
      return this.post(pr, `${body}\n\n${marker}`, inReplyTo, known);
    });
  }

  /** The server's own comment on the PR on GitHub holding `marker`, if there is one. */
  private async postedOnGitHub(pr: PullRequest, marker: string): Promise<Extract<Delivered, { kind: 'comment' }> | undefined> {
    const { forge } = this.options;
    if (!forge.pullRequestFeedback) return undefined;
    const own = await this.ownLogin(pr.repo);
    const comments = (await forge.pullRequestFeedback(pr.repo, pr.number)).flatMap((item) => (item.kind === 'comment' && item.body.includes(marker) ? [item] : []));
    return comments.find((comment) => (own !== undefined ? comment.author.login === own : comment.author.bot));
  }

  private login: Promise<string | undefined> | undefined;

  /** One account for every repository (an App's installation tokens are minted per repository, the bot is one). */
  private ownLogin(repo: string): Promise<string | undefined> {
    const { forge } = this.options;
    this.login ??= forge.viewerLogin
      ? forge.viewerLogin(repo).catch((error: unknown) => {
        this.options.logger?.warn({ err: error }, 'GitHub did not say who the server is (GraphQL viewer); a bot account\'s comment with the marker counts as its own');
        this.login = undefined;
        return undefined;
      })
      : Promise.resolve(undefined);
    return this.login;
  }

  private async post(pr: PullRequest, body: string, inReplyTo?: number, listed?: readonly PullRequestComment[]): Promise<PullRequestComment> {
    const text = this.mask(body);
    const known = listed ?? (await this.options.store.listComments(pr.repo, pr.number));
    const parent = inReplyTo === undefined ? undefined : known.find((comment) => comment.id === inReplyTo);
    // Only a line comment has a thread on GitHub; a reply to anything else is a PR comment that quotes whom it answers.
    const inThread = parent?.forgeKind === 'review_comment' && parent.forgeId !== undefined;
    const posted = inThread
      ? await this.options.forge.replyToReviewComment(pr.repo, pr.number, parent.forgeId!, text)
      : await this.options.forge.commentOnPullRequest(pr.repo, pr.number, parent ? `@${parent.author} ${text}` : text);
    return this.options.store.addComment({
      repo: pr.repo,
      number: pr.number,
      author: BOT_AUTHOR,
      kind: 'comment',
      body: text,
      ...(inReplyTo !== undefined ? { inReplyTo } : {}),
      steering: 'bot',
      headSha: pr.headSha,
      createdAt: posted.createdAt || this.now().toISOString(),
      forgeId: posted.id,
      forgeKind: inThread ? 'review_comment' : 'issue_comment',
    });
  }
}

/** The hidden line a reply carries so that it is found again: `<!-- dockhand:round:2:comment:7 -->`. */
export function replyMarker(key: string): string {
  return `<!-- dockhand:${key.replace(/[^\w:.-]/g, '_')} -->`;
}

