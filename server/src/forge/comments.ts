import { z } from 'zod';
import { DockhandError } from '../errors';
import { maskSecrets } from '../policy/mask';
import { type NewPullRequestCheck, type PullRequestCheck, type CheckConclusion, trimCheckLog, latestChecks } from './checks';
import { hunkForLine } from './comments-diff';
import { createGit } from './git';
import type { LocalForge } from './local-forge';
import type { PullRequest } from './types';

/**
 * What comes back on a pull request of the local forge: comments (general, or on a file and line
 * of the PR's diff), reviews (approve / request changes) and checks on its commits. Each comment
 * is recorded with whether its author may steer the task (`steering`): the task's requester, the
 * repository's owners and its listed submitters may; anyone else is recorded as `ignored` with the
 * reason and never reaches the model (`followup/`). The text passes the same gate as a ticket's
 * (secrets masked before it is stored) and hidden content (HTML and Markdown comments, invisible
 * characters) is taken out before the model sees it (`modelText`).
 */

import { REVIEW_VERDICTS, PullRequestCommentSchema, type ReviewVerdict, type PullRequestComment } from '@dockhand/protocol';
import { hasHiddenContent, hiddenNote, removeHidden } from '../policy/neutralise';

export { REVIEW_VERDICTS, PullRequestCommentSchema, type ReviewVerdict, type PullRequestComment };

export type NewPullRequestComment = Omit<PullRequestComment, 'id'>;

/** The store port for comments and checks (SQLite and Postgres: `store/pr-threads.ts`). */
export interface PullRequestThreadStore {
  addComment(comment: NewPullRequestComment): Promise<PullRequestComment>;
  listComments(repo: string, number: number): Promise<PullRequestComment[]>;
  /** Marks a comment's thread resolved by a commit. */
  resolveComment(repo: string, id: number, commitSha: string): Promise<PullRequestComment>;
  addCheck(check: NewPullRequestCheck): Promise<PullRequestCheck>;
  listChecks(repo: string, sha: string): Promise<PullRequestCheck[]>;
}

/** What the PR follower reads and writes on a PR's threads, whichever forge holds them. */
export interface FollowedThreads {
  /** The PR, its comments and reviews, and the latest result of each check on its head. */
  view(repo: string, number: number): Promise<{ pr: PullRequest; comments: PullRequestComment[]; checks: PullRequestCheck[] }>;
  /** The server's own reply (in the thread of `inReplyTo`, a store id) or a general PR comment. */
  reply(pr: PullRequest, body: string, inReplyTo?: number): Promise<PullRequestComment>;
  /**
   * Resolves the forge's thread of comment `id` (a store id) where the forge keeps threads of its
   * own (GitHub); never throws: a thread it may not resolve is logged and left. The local forge's
   * threads are the store's, resolved by `resolveComment`.
   */
  resolveThread?(pr: PullRequest, id: number): Promise<void>;
  /**
   * `reply`, at most once per `key` even when the server died between the forge's answer and the
   * store's record (GitHub: found again on the forge by a hidden marker). Absent where the reply
   * and its record are one write (the local forge: its store is the forge).
   */
  replyOnce?(pr: PullRequest, body: string, key: string, inReplyTo?: number): Promise<PullRequestComment>;
}

/** Who may steer a PR's task. `requester` is undefined for a PR no task opened. */
export interface Stewards {
  requester?: string;
  owners: readonly string[];
  /** The registration's listed submitters; an empty list (anyone may submit) lets nobody steer by it. */
  submitters: readonly string[];
}

export const BOT_AUTHOR = 'dockhand';

/** May `author` steer? An empty submitter list opens submitting to all, never steering to all. */
export function steeringOf(author: string, stewards: Stewards): { steering: 'allowed' | 'ignored'; ignoredBecause?: string } {
  if (author === stewards.requester) return { steering: 'allowed' };
  if (stewards.owners.includes(author)) return { steering: 'allowed' };
  if (stewards.submitters.includes(author)) return { steering: 'allowed' };
  return {
    steering: 'ignored',
    ignoredBecause: `${author} is not the task's requester${stewards.requester ? ` (${stewards.requester})` : ''}, an owner or a listed submitter of the repository`,
  };
}

/**
 * A comment as the model is given it: what a renderer hides taken out (`policy/neutralise.ts`),
 * said so. A comment steers a diff; a part its author hid from the reviewers has no reason to be
 * followed at all, so it is removed rather than marked as a ticket's is.
 */
export function modelText(comment: Pick<PullRequestComment, 'body'>): string {
  const { text, hidden } = removeHidden(comment.body);
  const visible = text.trim();
  return hidden.length > 0 ? `${visible}\n${hiddenNote('this comment', hidden, true)}` : visible;
}

export interface ThreadsOptions {
  forge: LocalForge;
  store: PullRequestThreadStore;
  /** Who may steer the PR's task (its requester, the repository's owners and submitters). */
  stewards: (repo: string, pr: PullRequest) => Promise<Stewards>;
  /** Secrets the server holds: masked in every stored text, as in tickets. */
  known?: readonly string[];
  now?: () => Date;
}

export interface CommentInput {
  repo: string;
  number: number;
  author: string;
  body: string;
  path?: string;
  line?: number;
  inReplyTo?: number;
}

export interface CheckInput {
  repo: string;
  number: number;
  name: string;
  conclusion: CheckConclusion;
  log?: string;
  postedBy: string;
  /** The commit the check ran on; default the PR's head. */
  sha?: string;
}

export class PullRequestThreads implements FollowedThreads {
  private readonly now: () => Date;

  constructor(private readonly options: ThreadsOptions) {
    this.now = options.now ?? (() => new Date());
  }

  private mask(text: string): string {
    return maskSecrets(text, { known: this.options.known ?? [] });
  }

  private async openPullRequest(repo: string, number: number): Promise<PullRequest> {
    const pr = await this.options.forge.getPullRequest(repo, number);
    if (pr.state !== 'open') throw new DockhandError('conflict', `pull request ${pr.repo}#${number} is ${pr.state}; comments and reviews go on an open one`);
    return pr;
  }

  /** A comment: general, on a line of the PR's diff (`path` + `line`), or a reply in a thread. */
  async comment(input: CommentInput): Promise<PullRequestComment> {
    if ((input.path === undefined) !== (input.line === undefined)) {
      throw new DockhandError('bad_request', `${input.path === undefined ? 'path' : 'line'}: a line comment needs both a path and a line`, { field: input.path === undefined ? 'path' : 'line' });
    }
    if (input.body.trim() === '') throw new DockhandError('bad_request', 'body: a comment needs text', { field: 'body' });
    const pr = await this.openPullRequest(input.repo, input.number);
    let hunk: string | undefined;
    if (input.path !== undefined && input.line !== undefined) {
      hunk = hunkForLine(input.path, input.line, await this.fileDiff(pr, input.path), `pull request ${pr.repo}#${pr.number}`);
    }
    if (input.inReplyTo !== undefined) {
      const comments = await this.options.store.listComments(pr.repo, pr.number);
      if (!comments.some((comment) => comment.id === input.inReplyTo)) {
        throw new DockhandError('bad_request', `inReplyTo: comment ${input.inReplyTo} is not on ${pr.repo}#${pr.number}`, { field: 'inReplyTo' });
      }
    }
    return this.record(pr, input.author, {
      kind: 'comment',
      body: input.body,
      ...(input.path !== undefined && input.line !== undefined && hunk !== undefined ? { path: input.path, line: input.line, hunk } : {}),
      ...(input.inReplyTo !== undefined ? { inReplyTo: input.inReplyTo } : {}),
    });
  }

  /** A review: approve, or request changes (with an optional text). */
  async review(input: { repo: string; number: number; author: string; verdict: ReviewVerdict; body?: string }): Promise<PullRequestComment> {
    const pr = await this.openPullRequest(input.repo, input.number);
    return this.record(pr, input.author, { kind: 'review', verdict: input.verdict, body: input.body ?? '' });
  }

  /** The server's own reply or summary (never steers). */
  async reply(pr: PullRequest, body: string, inReplyTo?: number): Promise<PullRequestComment> {
    return this.options.store.addComment({
      repo: pr.repo,
      number: pr.number,
      author: BOT_AUTHOR,
      kind: 'comment',
      body: this.mask(body),
      ...(inReplyTo !== undefined ? { inReplyTo } : {}),
      steering: 'bot',
      headSha: pr.headSha,
      createdAt: this.now().toISOString(),
    });
  }

  private async record(pr: PullRequest, author: string, fields: Pick<NewPullRequestComment, 'kind' | 'body'> & Partial<NewPullRequestComment>): Promise<PullRequestComment> {
    // Nobody posts as the server: its replies are the only comments that never steer and are trusted as its own.
    if (author === BOT_AUTHOR) throw new DockhandError('forbidden', `the user name ${BOT_AUTHOR} is the server's own; comment as yourself`);
    const steering = steeringOf(author, await this.options.stewards(pr.repo, pr));
    return this.options.store.addComment({
      ...fields,
      repo: pr.repo,
      number: pr.number,
      author,
      body: this.mask(fields.body),
      ...steering,
      ...(hasHiddenContent(fields.body) ? { hiddenContent: true } : {}),
      headSha: pr.headSha,
      createdAt: this.now().toISOString(),
    });
  }

  /** A check's result on the PR's head (or `sha`), its log trimmed and masked. */
  async check(input: CheckInput): Promise<PullRequestCheck> {
    const pr = await this.options.forge.getPullRequest(input.repo, input.number);
    return this.options.store.addCheck({
      repo: pr.repo,
      sha: input.sha ?? pr.headSha,
      name: input.name,
      conclusion: input.conclusion,
      log: this.mask(trimCheckLog(input.log ?? '')),
      postedBy: input.postedBy,
      createdAt: this.now().toISOString(),
    });
  }

  /** The PR, its comments and reviews, and the latest result of each check on its head. */
  async view(repo: string, number: number): Promise<{ pr: PullRequest; comments: PullRequestComment[]; checks: PullRequestCheck[] }> {
    const pr = await this.options.forge.getPullRequest(repo, number);
    const [comments, checks] = await Promise.all([this.options.store.listComments(pr.repo, number), this.options.store.listChecks(pr.repo, pr.headSha)]);
    return { pr, comments, checks: latestChecks(checks) };
  }

  /** One file's section of the PR's diff (from where the branch left its base to its head). */
  private async fileDiff(pr: PullRequest, path: string): Promise<string> {
    const git = createGit(this.options.forge.repositoryPath(pr.repo));
    const range = `refs/heads/${pr.base}...${pr.headSha}`;
    // The path is a file name, never a pathspec (`*`, `:(glob)…`), and exactly a file the PR
    // changes: a folder would match every file under it. Empty when it is not one (a 400 naming `path`).
    const changed = (await git.raw(['--literal-pathspecs', 'diff', '--name-only', '-z', '--no-renames', range])).split('\0');
    if (!changed.includes(path)) return '';
    return git.raw(['--literal-pathspecs', 'diff', '--no-color', '--no-ext-diff', '--no-renames', range, '--', path]);
  }
}
