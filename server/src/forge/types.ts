/**
 * The forge contract: where pull requests live. `LocalForge` (bare repositories on disk, the
 * embedded default) and `GitHubForge` (REST through Octokit) implement it. The server pushes with
 * `pushChange` (push.ts) and then asks the forge for a pull request; the forge never sees the
 * sandbox and the sandbox never sees a forge credential.
 */

export type PullRequestState = 'open' | 'merged' | 'closed';

export interface PullRequest {
  /** The forge's name for the repository: a local repo name, or `owner/name` on GitHub. */
  repo: string;
  number: number;
  url: string;
  title: string;
  body: string;
  /** Head branch, e.g. `dockhand/42-fix-paginate`. */
  branch: string;
  /** Branch the PR merges into. */
  base: string;
  headSha: string;
  draft: boolean;
  state: PullRequestState;
  createdAt: string;
  mergedAt?: string;
  closedAt?: string;
  /** The commit that landed the change on `base` (merge or squash commit). */
  mergeSha?: string;
}

export interface Issue {
  number: number;
  title: string;
  body: string;
  url: string;
  labels: string[];
}

export interface OpenPullRequestInput {
  repo: string;
  branch: string;
  base: string;
  title: string;
  body: string;
  /** Default true: Dockhand's PRs are drafts until a human marks them ready. */
  draft?: boolean;
}

/** Where and how the server pushes a branch for a repo. */
export interface PushTarget {
  /** Remote URL or local path, never with credentials in it. */
  url: string;
  /** Short-lived token for this push only; undefined when the remote needs none (local paths). */
  token?: string;
  /** User name sent with the token (`x-access-token` for GitHub App and fine-grained tokens). */
  username?: string;
  defaultBranch: string;
}

export type PullRequestOutcomeKind = 'merged' | 'closed' | 'reverted';

/** Matches the `pr.outcome` event payload. */
export interface PullRequestOutcome {
  outcome: PullRequestOutcomeKind;
  at: string;
  /** For `reverted`: the commit on the base branch that reverted the change. */
  revertSha?: string;
}

export interface OutcomeOptions {
  /** A revert within this many days of the merge counts (default 14). */
  revertWindowDays?: number;
  now?: Date;
}

export interface Forge {
  readonly kind: 'local' | 'github';
  pushTarget(repo: string): Promise<PushTarget>;
  /** Does `branch` exist in the repository (a PR's base is the task's branch when it does)? */
  hasBranch(repo: string, branch: string): Promise<boolean>;
  /** Idempotent per branch: returns the open PR of `branch` when there already is one. */
  openPullRequest(input: OpenPullRequestInput): Promise<PullRequest>;
  findPullRequest(repo: string, branch: string): Promise<PullRequest | undefined>;
  getPullRequest(repo: string, number: number): Promise<PullRequest>;
  listOpenIssues(repo: string): Promise<Issue[]>;
  /**
   * The latest outcome: undefined while open; `closed`; `merged`; or `reverted` once a commit on
   * the base branch within the revert window says `This reverts commit <sha>` of the PR's commits.
   * Callers poll this until `isOutcomeFinal` says there is nothing more to learn.
   */
  getOutcome(repo: string, number: number, options?: OutcomeOptions): Promise<PullRequestOutcome | undefined>;
}

/** The local forge's PR records; the fleet store implements it on SQLite. */
export type PullRequestRecord = Omit<PullRequest, 'url'>;
export type NewPullRequestRecord = Omit<PullRequestRecord, 'number'>;

export interface PullRequestStore {
  /** Stores a new PR under the next number of its repo (1, 2, …) and returns it. */
  insert(record: NewPullRequestRecord): Promise<PullRequestRecord>;
  get(repo: string, number: number): Promise<PullRequestRecord | undefined>;
  /** The most recent PR (any state) whose head is `branch`. */
  findByBranch(repo: string, branch: string): Promise<PullRequestRecord | undefined>;
  update(
    repo: string,
    number: number,
    patch: Partial<Pick<PullRequestRecord, 'title' | 'body' | 'headSha' | 'draft' | 'state' | 'mergedAt' | 'closedAt' | 'mergeSha'>>,
  ): Promise<PullRequestRecord>;
  list(repo: string, filter?: { state?: PullRequestState }): Promise<PullRequestRecord[]>;
}

export const DEFAULT_REVERT_WINDOW_DAYS = 14;
const DAY_MS = 86_400_000;

/** True when polling can stop: closed, reverted, or merged longer ago than the revert window. */
export function isOutcomeFinal(
  outcome: PullRequestOutcome | undefined,
  options: OutcomeOptions = {},
): boolean {
  if (!outcome) return false;
  if (outcome.outcome !== 'merged') return true;
  const windowMs = (options.revertWindowDays ?? DEFAULT_REVERT_WINDOW_DAYS) * DAY_MS;
  return (options.now ?? new Date()).getTime() - Date.parse(outcome.at) > windowMs;
}
