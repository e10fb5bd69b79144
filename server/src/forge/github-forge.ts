import { Octokit } from '@octokit/rest';
import { DockhandError } from '../errors';
import { commitStatusFeedback, failedJobsLog, type FailedJobsLog } from './github-actions';
import type { GitHubRepo, GitHubTokenProvider } from './github-auth';
import { resolveReviewThread, VIEWER_QUERY, type ResolveOutcome } from './github-review-threads';
import { checkRunFeedback, issueCommentFeedback, reviewCommentFeedback, reviewFeedback } from './github-poll';
import { findRevert } from './revert';
import type { GitHubFeedback } from './webhook';
import {
  DEFAULT_REVERT_WINDOW_DAYS,
  type Forge,
  type Issue,
  type OpenPullRequestInput,
  type OutcomeOptions,
  type PullRequest,
  type PullRequestOutcome,
  type PushTarget,
} from './types';

/**
 * GitHub through Octokit REST. Repositories are named `owner/name` (a `https://github.com/…`
 * URL or `git@github.com:…` remote is accepted and normalised). PRs are opened as drafts; the
 * outcome comes from polling `getOutcome` or from the `pull_request` webhook (`webhook.ts`).
 */

export interface GitHubForgeOptions {
  tokens: GitHubTokenProvider;
  /** API root; default https://api.github.com (GitHub Enterprise: https://HOST/api/v3). */
  baseUrl?: string;
  /** Web root used for clone URLs; default https://github.com. */
  webUrl?: string;
  /** For tests: a fetch that never touches the network. */
  fetch?: typeof fetch;
  now?: () => Date;
}

export function parseGitHubRepo(repo: string): GitHubRepo {
  const match =
    /^(?:https?:\/\/[^/]+\/|git@[^:]+:|ssh:\/\/git@[^/]+\/)?([A-Za-z0-9_.-]+)\/([A-Za-z0-9_.-]+?)(?:\.git)?\/?$/.exec(repo.trim());
  if (!match) {
    throw new DockhandError('bad_request', `repo: "${repo}" is not a GitHub repository (owner/name or its URL)`, { field: 'repo' });
  }
  return { owner: match[1]!, name: match[2]! };
}

interface RestPull {
  number: number;
  html_url: string;
  title: string;
  body?: string | null;
  head: { ref: string; sha: string };
  base: { ref: string };
  draft?: boolean;
  state: string;
  created_at: string;
  merged_at?: string | null;
  closed_at?: string | null;
  merge_commit_sha?: string | null;
}

function toPullRequest(repo: GitHubRepo, pull: RestPull): PullRequest {
  const pr: PullRequest = {
    repo: `${repo.owner}/${repo.name}`,
    number: pull.number,
    url: pull.html_url,
    title: pull.title,
    body: pull.body ?? '',
    branch: pull.head.ref,
    base: pull.base.ref,
    headSha: pull.head.sha,
    draft: pull.draft ?? false,
    state: pull.merged_at ? 'merged' : pull.state === 'closed' ? 'closed' : 'open',
    createdAt: pull.created_at,
  };
  if (pull.merged_at) pr.mergedAt = pull.merged_at;
  if (pull.closed_at) pr.closedAt = pull.closed_at;
  if (pull.merged_at && pull.merge_commit_sha) pr.mergeSha = pull.merge_commit_sha;
  return pr;
}

/** A comment the server posted on GitHub. */
export interface PostedComment {
  id: number;
  url: string;
  createdAt: string;
}

function isDraftUnsupported(error: unknown): boolean {
  return (
    error instanceof Error &&
    'status' in error &&
    error.status === 422 &&
    /draft pull requests are not supported/i.test(error.message)
  );
}

export class GitHubForge implements Forge {
  readonly kind = 'github' as const;

  constructor(private readonly options: GitHubForgeOptions) {}

  private async client(repo: GitHubRepo, token?: string): Promise<Octokit> {
    return new Octokit({
      auth: token ?? (await this.options.tokens.token(repo)),
      userAgent: 'dockhand',
      ...(this.options.baseUrl ? { baseUrl: this.options.baseUrl } : {}),
      ...(this.options.fetch ? { request: { fetch: this.options.fetch } } : {}),
    });
  }

  async pushTarget(repo: string): Promise<PushTarget> {
    const target = parseGitHubRepo(repo);
    // One token per push: minted here, used for the default-branch lookup and handed to git.
    const token = await this.options.tokens.token(target);
    const octokit = await this.client(target, token);
    const { data } = await octokit.rest.repos.get({ owner: target.owner, repo: target.name });
    const web = (this.options.webUrl ?? 'https://github.com').replace(/\/$/, '');
    return {
      url: `${web}/${target.owner}/${target.name}.git`,
      token,
      username: 'x-access-token',
      defaultBranch: data.default_branch,
    };
  }

  async hasBranch(repo: string, branch: string): Promise<boolean> {
    const target = parseGitHubRepo(repo);
    const octokit = await this.client(target);
    try {
      await octokit.rest.repos.getBranch({ owner: target.owner, repo: target.name, branch });
      return true;
    } catch (error) {
      if (error instanceof Error && 'status' in error && error.status === 404) return false;
      throw error;
    }
  }

  async findPullRequest(repo: string, branch: string): Promise<PullRequest | undefined> {
    const target = parseGitHubRepo(repo);
    const octokit = await this.client(target);
    const { data } = await octokit.rest.pulls.list({
      owner: target.owner,
      repo: target.name,
      head: `${target.owner}:${branch}`,
      state: 'all',
      sort: 'created',
      direction: 'desc',
      per_page: 1,
    });
    const pull = data[0];
    return pull ? toPullRequest(target, pull) : undefined;
  }

  async openPullRequest(input: OpenPullRequestInput): Promise<PullRequest> {
    const existing = await this.findPullRequest(input.repo, input.branch);
    if (existing && existing.state === 'open') return existing;
    const target = parseGitHubRepo(input.repo);
    const octokit = await this.client(target);
    const create = (draft: boolean) =>
      octokit.rest.pulls.create({
        owner: target.owner,
        repo: target.name,
        head: input.branch,
        base: input.base,
        title: input.title,
        body: input.body,
        draft,
      });
    const draft = input.draft ?? true;
    try {
      return toPullRequest(target, (await create(draft)).data);
    } catch (error) {
      // Repositories on plans without draft PRs answer 422 "Draft pull requests are not supported".
      if (draft && isDraftUnsupported(error)) return toPullRequest(target, (await create(false)).data);
      throw error;
    }
  }

  async getPullRequest(repo: string, number: number): Promise<PullRequest> {
    const target = parseGitHubRepo(repo);
    const octokit = await this.client(target);
    const { data } = await octokit.rest.pulls.get({ owner: target.owner, repo: target.name, pull_number: number });
    return toPullRequest(target, data);
  }

  /** A general comment on a PR (an issue comment: GitHub's PRs are issues too). */
  async commentOnPullRequest(repo: string, number: number, body: string): Promise<PostedComment> {
    const target = parseGitHubRepo(repo);
    const octokit = await this.client(target);
    const { data } = await octokit.rest.issues.createComment({ owner: target.owner, repo: target.name, issue_number: number, body });
    return { id: data.id, url: data.html_url, createdAt: data.created_at };
  }

  /** A reply in the thread of a line comment (`commentId`: GitHub's id of a review comment). */
  async replyToReviewComment(repo: string, number: number, commentId: number, body: string): Promise<PostedComment> {
    const target = parseGitHubRepo(repo);
    const octokit = await this.client(target);
    const { data } = await octokit.rest.pulls.createReplyForReviewComment({ owner: target.owner, repo: target.name, pull_number: number, comment_id: commentId, body });
    return { id: data.id, url: data.html_url, createdAt: data.created_at };
  }

  /** The login the server posts as (GraphQL's `viewer`: a user for a token, `<app>[bot]` for an App installation). */
  async viewerLogin(repo: string): Promise<string> {
    const octokit = await this.client(parseGitHubRepo(repo));
    const answer = await octokit.graphql<{ viewer: { login: string } }>(VIEWER_QUERY);
    return answer.viewer.login;
  }

  /** Resolves the review thread holding line comment `commentId` (GraphQL: REST has no threads). */
  async resolveReviewThread(repo: string, number: number, commentId: number): Promise<ResolveOutcome> {
    const target = parseGitHubRepo(repo);
    return resolveReviewThread(await this.client(target), target, number, commentId);
  }

  /**
   * What a PR's webhooks would have delivered, read back (the polling fallback): its line
   * comments, general comments and submitted reviews.
   */
  async pullRequestFeedback(repo: string, number: number): Promise<Exclude<GitHubFeedback, { kind: 'outcome' }>[]> {
    const target = parseGitHubRepo(repo);
    const octokit = await this.client(target);
    const name = `${target.owner}/${target.name}`;
    const where = { owner: target.owner, repo: target.name, per_page: 100 };
    const [lineComments, comments, reviews] = await Promise.all([
      octokit.paginate(octokit.rest.pulls.listReviewComments, { ...where, pull_number: number }),
      octokit.paginate(octokit.rest.issues.listComments, { ...where, issue_number: number }),
      octokit.paginate(octokit.rest.pulls.listReviews, { ...where, pull_number: number }),
    ]);
    return [
      ...lineComments.map((comment) => reviewCommentFeedback(name, number, comment)),
      ...comments.map((comment) => issueCommentFeedback(name, number, comment)),
      ...reviews.flatMap((review) => reviewFeedback(name, number, review) ?? []),
    ];
  }

  /** The completed check runs on a commit, re-runs included (the polling fallback's checks). */
  async completedChecks(repo: string, sha: string): Promise<Exclude<GitHubFeedback, { kind: 'outcome' }>[]> {
    const target = parseGitHubRepo(repo);
    const octokit = await this.client(target);
    const { data } = await octokit.rest.checks.listForRef({ owner: target.owner, repo: target.name, ref: sha, filter: 'all', per_page: 100 });
    return data.check_runs.flatMap((run) => checkRunFeedback(`${target.owner}/${target.name}`, run) ?? []);
  }

  /** The commit statuses on a commit that are no longer pending, latest per context (GitHub's combined status). */
  async commitStatuses(repo: string, sha: string): Promise<Exclude<GitHubFeedback, { kind: 'outcome' }>[]> {
    const target = parseGitHubRepo(repo);
    const octokit = await this.client(target);
    const { data } = await octokit.rest.repos.getCombinedStatusForRef({ owner: target.owner, repo: target.name, ref: sha, per_page: 100 });
    return data.statuses.flatMap((status) => commitStatusFeedback(`${target.owner}/${target.name}`, sha, status) ?? []);
  }

  /** The failed jobs' logs behind a red check GitHub Actions ran (`github-actions.ts`); undefined for any other check. */
  async failedJobsLog(repo: string, check: Extract<GitHubFeedback, { kind: 'check' }>): Promise<FailedJobsLog | undefined> {
    const target = parseGitHubRepo(repo);
    return failedJobsLog(await this.client(target), target, check, { fetch: this.options.fetch ?? globalThis.fetch });
  }

  async listOpenIssues(repo: string): Promise<Issue[]> {
    const target = parseGitHubRepo(repo);
    const octokit = await this.client(target);
    const { data } = await octokit.rest.issues.listForRepo({ owner: target.owner, repo: target.name, state: 'open', per_page: 100 });
    return data
      .filter((issue) => issue.pull_request === undefined) // the issues API lists PRs too
      .map((issue) => ({
        number: issue.number,
        title: issue.title,
        body: issue.body ?? '',
        url: issue.html_url,
        labels: issue.labels.map((label) => (typeof label === 'string' ? label : (label.name ?? ''))).filter(Boolean),
      }));
  }

  async getOutcome(repo: string, number: number, options: OutcomeOptions = {}): Promise<PullRequestOutcome | undefined> {
    const pr = await this.getPullRequest(repo, number);
    if (pr.state === 'open') return undefined;
    if (pr.state === 'closed') return { outcome: 'closed', at: pr.closedAt ?? pr.createdAt };
    const mergedAt = pr.mergedAt ?? pr.createdAt;
    const target = parseGitHubRepo(repo);
    const octokit = await this.client(target);
    const windowDays = options.revertWindowDays ?? DEFAULT_REVERT_WINDOW_DAYS;
    const until = new Date(Math.min(Date.parse(mergedAt) + windowDays * 86_400_000, (options.now ?? new Date()).getTime()));
    const [prCommits, branchCommits] = await Promise.all([
      octokit.rest.pulls.listCommits({ owner: target.owner, repo: target.name, pull_number: number, per_page: 100 }),
      octokit.rest.repos.listCommits({
        owner: target.owner,
        repo: target.name,
        sha: pr.base,
        since: mergedAt,
        until: until.toISOString(),
        per_page: 100,
      }),
    ]);
    const prShas = [...(pr.mergeSha ? [pr.mergeSha] : []), pr.headSha, ...prCommits.data.map((commit) => commit.sha)];
    const commits = branchCommits.data.map((commit) => ({
      sha: commit.sha,
      message: commit.commit.message,
      date: commit.commit.committer?.date ?? commit.commit.author?.date ?? mergedAt,
    }));
    return findRevert({ commits, prShas, mergedAt, windowDays }) ?? { outcome: 'merged', at: mergedAt };
  }
}
