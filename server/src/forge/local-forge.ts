import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { z } from 'zod';
import { DockhandError, notFound } from '../errors';
import { checkGitSource, GitChildren, removeFetchLeftovers, type GitProgress } from '../git-child';
import { KeyedQueue } from '../keyed-queue';
import { copyBranches, lostDefaultBranch, skippedSummary, type CopyProgress, type Run, type SkippedBranch } from './branch-copy';
import { createGit, gitFailure, tryRaw } from './git';
import { findRevert, type BranchCommit } from './revert';
import { ORIGIN_BRANCHES, sourceDefaultBranch } from './source-branch';
import type {
  Forge,
  Issue,
  OpenPullRequestInput,
  OutcomeOptions,
  PullRequest,
  PullRequestOutcome,
  PullRequestRecord,
  PullRequestStore,
  PushTarget,
} from './types';

/**
 * The embedded forge: bare repositories under a data directory are the "origin" of sample
 * repos, pull requests are records in a `PullRequestStore`, and merging is a real `git merge`
 * into the default branch, done in a temporary worktree of the bare repository.
 *
 * Layout under `dataDir`: `<name>.git/` (bare repository) and `<name>.issues.json` (the repo's
 * issues, an array of `{number, title, body, state, labels}`).
 *
 * The local forge needs no credentials; it is for one machine (demo, tests, single-team use).
 */

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
/** Where a copy keeps the source's origin branches (`refs/remotes/origin/*` of a clone). */
const SOURCE_ORIGIN = 'refs/dockhand/source-origin/';

const IssueFile = z.array(
  z.object({
    number: z.number().int().min(1),
    title: z.string().min(1),
    body: z.string().default(''),
    state: z.enum(['open', 'closed']).default('open'),
    labels: z.array(z.string()).default([]),
  }),
);
type IssueFile = z.infer<typeof IssueFile>;

export interface LocalForgeOptions {
  dataDir: string;
  store: PullRequestStore;
  /** Identity of merge commits made by `merge()`. */
  mergeIdentity?: { name: string; email: string };
  now?: () => Date;
}

export interface ImportOptions {
  /** The git children to run in (killed together on shutdown); default a group of its own. */
  children?: GitChildren;
  /** Total limit of a short git call (ls-remote, update-ref, …); default 120 s. */
  timeoutMs?: number;
  /** A fetch is stopped after this long without progress (never at a total time); default 120 s. */
  inactivityMs?: number;
  signal?: AbortSignal;
  /** The default branch when the caller already knows it. */
  defaultBranch?: string;
  /** Copy only the default branch (a registration's first step: tasks at it can start). */
  onlyDefault?: boolean;
  /** Only these branches of the source (a task's branch the copy lacks). */
  branches?: string[];
  /** Told the source's branches that could not be copied (their history lacks objects there). */
  onSkipped?: (summary: string, skipped: SkippedBranch[]) => void;
  /** The source's `ls-remote --symref` output, when the caller has just read it. */
  sourceListing?: string;
  /** Called once the default branch is copied and HEAD names it, before the other branches are fetched. */
  onDefaultBranch?: () => Promise<void>;
  /** Told where the copy is (refs done of how many) and git's own progress of the running fetch. */
  onProgress?: (progress: ImportProgress) => void;
}

export interface ImportProgress extends CopyProgress {
  git?: GitProgress;
}

/** Default of `ImportOptions.inactivityMs`. */
export const FETCH_INACTIVITY_MS = 120_000;

/** Refuses a copy that lacks the default branch; tells the caller of the other skipped ones. */
function reportSkipped(source: string, skipped: SkippedBranch[], options: ImportOptions): void {
  if (skipped.length === 0) return;
  const branch = options.defaultBranch;
  const lost = branch && skipped.find(({ ref }) => ref === `refs/heads/${branch}` || ref === `${ORIGIN_BRANCHES}${branch}`);
  if (lost) throw lostDefaultBranch(source, branch, lost);
  options.onSkipped?.(skippedSummary(source, skipped), skipped);
}

/** The refs of the source a copy takes first, or only (`onlyDefault`, `branches`). */
function firstRefs(options: ImportOptions): { first: string[]; only?: string[] } {
  const named = (branches: string[]) => branches.flatMap((branch) => [`refs/heads/${branch}`, `${ORIGIN_BRANCHES}${branch}`]);
  const first = named([...(options.defaultBranch ? [options.defaultBranch] : []), ...(options.branches ?? [])]);
  if (options.branches) return { first, only: first };
  return options.onlyDefault ? { first, only: first } : { first };
}

export function localPullRequestUrl(repo: string, number: number): string {
  return `dockhand-local://${repo}/pulls/${number}`;
}

export class LocalForge implements Forge {
  readonly kind = 'local' as const;
  private readonly dataDir: string;
  private readonly store: PullRequestStore;
  private readonly mergeIdentity: { name: string; email: string };
  private readonly now: () => Date;
  /** Copies into one repository run one at a time (ref locks; each cleans what a killed one left). */
  private readonly copies = new KeyedQueue();

  constructor(options: LocalForgeOptions) {
    this.dataDir = resolve(options.dataDir);
    this.store = options.store;
    this.mergeIdentity = options.mergeIdentity ?? { name: 'Dockhand Local Forge', email: 'forge@dockhand.invalid' };
    this.now = options.now ?? (() => new Date());
  }

  /** Accepts a repo name (`sample-app`) or the path of its bare repository; returns the name. */
  repositoryName(repo: string): string {
    let name = repo;
    if (isAbsolute(repo)) {
      const rel = relative(this.dataDir, resolve(repo));
      if (rel.startsWith('..') || rel.includes('/')) {
        throw new DockhandError('not_found', `${repo} is not a repository of the local forge`, { field: 'repo' });
      }
      name = rel;
    }
    name = name.replace(/\.git$/, '');
    if (!NAME.test(name)) {
      throw new DockhandError('bad_request', `repo: "${repo}" is not a valid local repository name`, { field: 'repo' });
    }
    return name;
  }

  repositoryPath(repo: string): string {
    return join(this.dataDir, `${this.repositoryName(repo)}.git`);
  }

  private existingRepository(repo: string): string {
    const path = this.repositoryPath(repo);
    if (!existsSync(join(path, 'HEAD'))) throw notFound('repository', this.repositoryName(repo));
    return path;
  }

  /**
   * Creates the bare repository `<name>.git` and, when `from` is a repository (an absolute path on
   * this host, or a URL `checkGitSource` allows), copies its branches into it (forced: the forge's
   * branches become the source's), the default branch first, and points HEAD at the source's
   * default branch. `onlyDefault` copies that one alone (`copyBranches` skips what is already
   * here, so a second call copies the rest, and a stopped copy continues). Idempotent.
   */
  async createRepository(name: string, from?: string, options: ImportOptions = {}): Promise<string> {
    const path = this.repositoryPath(name);
    await mkdir(this.dataDir, { recursive: true });
    const children = options.children ?? new GitChildren();
    const step: Step = {};
    const run = this.runner(children, path, options, step);
    return this.copies.run(path, async () => {
      const empty = !existsSync(join(path, 'HEAD'));
      if (empty) await run(['init', '--quiet', '--bare', '--initial-branch=main', path], `creating ${name}`);
      if (from !== undefined && resolve(from) !== path) {
        const source = checkGitSource(from, 'source').source;
        const branch = options.defaultBranch ?? (await sourceDefaultBranch(children, source, options).catch(() => undefined));
        const refs = firstRefs({ ...options, ...(branch ? { defaultBranch: branch } : {}) });
        let pointed = false;
        const settle = async (skipped: SkippedBranch[]) => {
          reportSkipped(source, skipped, { ...options, ...(branch ? { defaultBranch: branch } : {}) });
          // A clone checked out at a commit may hold its branches only as its origin's.
          for (const [origin, sha] of await this.originOnly(run)) await run(['update-ref', `refs/heads/${origin}`, sha, ''], `copying ${origin}`).catch(() => undefined);
          if (branch && !pointed && (await this.hasBranch(name, branch))) {
            await run(['symbolic-ref', 'HEAD', `refs/heads/${branch}`], 'setting the default branch');
            pointed = true;
          }
        };
        const afterFirst = async (skipped: SkippedBranch[]) => {
          await settle(skipped);
          await options.onDefaultBranch?.();
        };
        await settle(await this.copy(path, run, step, source, [{ from: 'refs/heads/', to: 'refs/heads/' }, { from: ORIGIN_BRANCHES, to: SOURCE_ORIGIN }], `copying the branches of ${source}`, { ...refs, afterFirst, empty, ...(options.sourceListing ? { listing: options.sourceListing } : {}), ...progressOf(options) }));
      }
      return path;
    });
  }

  /** git in the repository: fetches with the inactivity limit and progress, the rest with a total limit. */
  private runner(children: GitChildren, path: string, options: ImportOptions, step: Step = {}): Run {
    return (args, what, transfer = false) =>
      children.run(args, {
        cwd: existsSync(path) ? path : this.dataDir,
        what,
        ...(transfer
          ? { inactivityMs: options.inactivityMs ?? FETCH_INACTIVITY_MS, ...(options.onProgress ? { onProgress: (git: GitProgress) => step.current && options.onProgress?.({ ...step.current, git }) } : {}) }
          : { timeoutMs: options.timeoutMs ?? 120_000 }),
        ...(options.signal ? { signal: options.signal } : {}),
      });
  }

  /** `copyBranches` after removing what a killed fetch left, and again after a failed one. */
  private async copy(path: string, run: Run, step: Step, source: string, mappings: Parameters<typeof copyBranches>[2], what: string, options: Parameters<typeof copyBranches>[4] = {}): Promise<SkippedBranch[]> {
    await removeFetchLeftovers(path);
    try {
      return await copyBranches(run, source, mappings, what, {
        ...options,
        onProgress: (progress) => {
          step.current = progress;
          options.onProgress?.(progress);
        },
      });
    } finally {
      await removeFetchLeftovers(path);
    }
  }

  /** Points the repository's HEAD (its default branch) at `branch`, which must exist in it. */
  async pointHead(repo: string, branch: string): Promise<void> {
    if (!(await this.hasBranch(repo, branch))) {
      throw new DockhandError('not_found', `branch ${branch} is not in the local forge's copy of ${this.repositoryName(repo)}`, { field: 'source', hint: 'run dockhand repo add again to copy the source\'s branches' });
    }
    await new GitChildren().run(['symbolic-ref', 'HEAD', `refs/heads/${branch}`], { cwd: this.existingRepository(repo), timeoutMs: 60_000, what: 'setting the default branch' });
  }

  /** Branches fetched from the source's origin (`refs/remotes/origin/*`) that the repository has no branch of. */
  private async originOnly(run: Run): Promise<Map<string, string>> {
    const listing = (await run(['for-each-ref', '--format=%(refname) %(objectname)', 'refs/heads/', SOURCE_ORIGIN], 'listing branches')).stdout.toString();
    const heads = new Set<string>();
    const origin = new Map<string, string>();
    for (const line of listing.split('\n').filter(Boolean)) {
      const [ref = '', sha = ''] = line.split(' ');
      if (ref.startsWith('refs/heads/')) heads.add(ref.slice('refs/heads/'.length));
      else if (ref !== `${SOURCE_ORIGIN}HEAD`) origin.set(ref.slice(SOURCE_ORIGIN.length), sha);
    }
    for (const branch of heads) origin.delete(branch);
    return origin;
  }

  /**
   * Fetches the source's branches into `refs/dockhand/source/*` (so every commit of the source is
   * here) and moves a forge branch only forward: a branch the forge lacks is created, one the
   * source has moved ahead is fast-forwarded, and one that went elsewhere on the forge (a merged
   * PR) is left alone. For tasks whose base was committed after the registration, and for a
   * readiness check of the source's head. Answers the source's branches and their commits.
   */
  async refreshFrom(name: string, from: string, options: ImportOptions = {}): Promise<Map<string, string>> {
    const path = this.existingRepository(name);
    const children = options.children ?? new GitChildren();
    const step: Step = {};
    const run = this.runner(children, path, options, step);
    const source = checkGitSource(from, 'source').source;
    return this.copies.run(path, async () => {
      const afterFirst = async () => {
        await options.onDefaultBranch?.();
      };
      const skipped = await this.copy(path, run, step, source, [{ from: 'refs/heads/', to: 'refs/dockhand/source/' }, { from: ORIGIN_BRANCHES, to: SOURCE_ORIGIN }], `fetching ${source}`, { ...firstRefs(options), prune: true, afterFirst, ...(options.sourceListing ? { listing: options.sourceListing } : {}), ...progressOf(options) });
      reportSkipped(source, skipped, options);
      return this.moveForward(name, run, options);
    });
  }

  /** The source's branches as fetched (`refs/dockhand/source/*`), each forge branch moved forward to its. */
  private async moveForward(name: string, run: Run, options: ImportOptions): Promise<Map<string, string>> {
    const listing = (await run(['for-each-ref', '--format=%(refname) %(objectname)', SOURCE_ORIGIN, 'refs/dockhand/source/'], 'listing branches')).stdout.toString();
    // The source's branches; where it has none of a name its origin has (a clone at a commit), the origin's.
    const branches = new Map<string, string>();
    for (const line of listing.split('\n').filter(Boolean)) {
      const [ref = '', sha = ''] = line.split(' ');
      if (ref.startsWith(SOURCE_ORIGIN) && ref !== `${SOURCE_ORIGIN}HEAD` && !branches.has(ref.slice(SOURCE_ORIGIN.length))) branches.set(ref.slice(SOURCE_ORIGIN.length), sha);
      else if (ref.startsWith('refs/dockhand/source/')) branches.set(ref.slice('refs/dockhand/source/'.length), sha);
    }
    const heads = await this.branchShas(name, [...branches.keys()]);
    for (const [branch, sha] of branches) {
      const current = heads.get(branch);
      if (current === sha) continue;
      const forward = current === undefined || (await this.isAncestor(name, current, sha, options));
      if (forward) await run(['update-ref', `refs/heads/${branch}`, sha, current ?? ''], `updating ${branch}`).catch(() => undefined);
    }
    return branches;
  }

  /**
   * The commit `branch` holds where it is ahead of `sha` (descends from it: PRs merged here on top
   * of the source's head), else undefined (the same commit, gone another way, or no branch).
   */
  async branchAheadOf(repo: string, branch: string, sha: string, options: ImportOptions = {}): Promise<string | undefined> {
    const current = await this.branchSha(repo, branch);
    if (current === undefined || current === sha) return undefined;
    return (await this.isAncestor(repo, sha, current, options)) ? current : undefined;
  }

  /** True when `ancestor` is `sha` or one of its ancestors in the repository. */
  private async isAncestor(repo: string, ancestor: string, sha: string, options: ImportOptions): Promise<boolean> {
    const children = options.children ?? new GitChildren();
    return children
      .run(['merge-base', '--is-ancestor', ancestor, sha], { cwd: this.existingRepository(repo), timeoutMs: options.timeoutMs ?? 120_000, what: 'comparing branches', ...(options.signal ? { signal: options.signal } : {}) })
      .then(() => true, () => false);
  }

  /** True when `branch` exists in the repository. */
  async hasBranch(repo: string, branch: string): Promise<boolean> {
    return (await this.branchSha(repo, branch)) !== undefined;
  }

  /** HEAD's branch; when HEAD names a branch that does not exist, main, master or the first one. */
  async defaultBranch(repo: string): Promise<string> {
    const git = createGit(this.existingRepository(repo));
    const head = await tryRaw(git, ['symbolic-ref', '--short', 'HEAD']);
    const present = await this.branchShas(repo, [...(head ? [head] : []), 'main', 'master']);
    for (const candidate of [head, 'main', 'master']) if (candidate && present.has(candidate)) return candidate;
    const first = await tryRaw(git, ['for-each-ref', '--count=1', '--format=%(refname:strip=2)', 'refs/heads/']);
    return first || head || 'main';
  }

  async pushTarget(repo: string): Promise<PushTarget> {
    return { url: this.existingRepository(repo), defaultBranch: await this.defaultBranch(repo) };
  }

  private toPullRequest(record: PullRequestRecord): PullRequest {
    return { ...record, url: localPullRequestUrl(record.repo, record.number) };
  }

  private async branchSha(repo: string, branch: string): Promise<string | undefined> {
    return (await this.branchShas(repo, [branch])).get(branch);
  }

  /**
   * The commits of those of `branches` that exist, in one git child (a delivery asks for three or
   * four: each child is a process, and a burst of pushes runs hundreds).
   */
  private async branchShas(repo: string, branches: string[]): Promise<Map<string, string>> {
    const git = createGit(this.existingRepository(repo));
    const wanted = new Set(branches);
    const listing = await tryRaw(git, ['for-each-ref', '--format=%(objecttype) %(objectname) %(refname)', ...(wanted.size > 100 ? ['refs/heads/'] : [...wanted].map((branch) => `refs/heads/${branch}`))]);
    const found = new Map<string, string>();
    for (const line of (listing ?? '').split('\n')) {
      const [type, sha, ref] = line.split(' ');
      // A pattern also matches refs below it (refs/heads/a matches refs/heads/a/b): exact names only.
      const branch = ref?.slice('refs/heads/'.length);
      if (type === 'commit' && sha && branch !== undefined && ref?.startsWith('refs/heads/') && wanted.has(branch)) found.set(branch, sha);
    }
    return found;
  }

  async openPullRequest(input: OpenPullRequestInput): Promise<PullRequest> {
    const repo = this.repositoryName(input.repo);
    const present = await this.branchShas(repo, [input.branch, input.base]);
    const headSha = present.get(input.branch);
    if (headSha === undefined) {
      throw new DockhandError('not_found', `branch ${input.branch} does not exist in ${repo}; push it first`, { field: 'branch' });
    }
    if (!present.has(input.base)) {
      throw new DockhandError('not_found', `base branch ${input.base} does not exist in ${repo}`, { field: 'base' });
    }
    const existing = await this.store.findByBranch(repo, input.branch);
    if (existing && existing.state === 'open') {
      const updated = existing.headSha === headSha ? existing : await this.store.update(repo, existing.number, { headSha });
      return this.toPullRequest(updated);
    }
    const record = await this.store.insert({
      repo,
      title: input.title,
      body: input.body,
      branch: input.branch,
      base: input.base,
      headSha,
      draft: input.draft ?? true,
      state: 'open',
      createdAt: this.now().toISOString(),
    });
    return this.toPullRequest(record);
  }

  async findPullRequest(repo: string, branch: string): Promise<PullRequest | undefined> {
    const record = await this.store.findByBranch(this.repositoryName(repo), branch);
    return record ? this.toPullRequest(record) : undefined;
  }

  async getPullRequest(repo: string, number: number): Promise<PullRequest> {
    const name = this.repositoryName(repo);
    const record = await this.store.get(name, number);
    if (!record) throw notFound('pull request', `${name}#${number}`);
    return this.toPullRequest(record);
  }

  /**
   * Merges the PR's branch into its base with a merge commit (`--no-ff`), as a reviewer pressing
   * "Merge" would. The base ref moves only if nobody moved it meanwhile (compare-and-swap).
   */
  async merge(repo: string, number: number, options: { by?: string } = {}): Promise<PullRequest> {
    const pr = await this.getPullRequest(repo, number);
    if (pr.state !== 'open') throw new DockhandError('conflict', `pull request ${pr.repo}#${number} is ${pr.state}`);
    const bare = this.existingRepository(pr.repo);
    const headSha = await this.branchSha(pr.repo, pr.branch);
    const baseSha = await this.branchSha(pr.repo, pr.base);
    if (headSha === undefined || baseSha === undefined) {
      throw new DockhandError('conflict', `branch ${headSha === undefined ? pr.branch : pr.base} is gone from ${pr.repo}`);
    }
    const git = createGit(bare);
    const scratch = await mkdtemp(join(tmpdir(), 'dockhand-merge-'));
    const worktree = join(scratch, 'tree');
    const date = this.now().toISOString();
    let mergeSha: string;
    try {
      await git.raw(['worktree', 'add', '--detach', '--quiet', worktree, baseSha]);
      const work = createGit(worktree, { date });
      const who = options.by ? `\n\nMerged-by: ${options.by}` : '';
      try {
        await work.raw([
          '-c', `user.name=${this.mergeIdentity.name}`,
          '-c', `user.email=${this.mergeIdentity.email}`,
          'merge', '--no-ff', '--no-verify', '--quiet',
          '-m', `Merge pull request #${number} from ${pr.branch}\n\n${pr.title}${who}`,
          headSha,
        ]);
      } catch (error) {
        await tryRaw(work, ['merge', '--abort']);
        throw gitFailure(`pull request ${pr.repo}#${number} does not merge cleanly`, error, [], 'conflict');
      }
      mergeSha = (await work.raw(['rev-parse', 'HEAD'])).trim();
      try {
        await git.raw(['update-ref', `refs/heads/${pr.base}`, mergeSha, baseSha]);
      } catch (error) {
        throw gitFailure(`${pr.base} moved while merging; try again`, error, [], 'conflict');
      }
    } finally {
      await tryRaw(git, ['worktree', 'remove', '--force', worktree]);
      await rm(scratch, { recursive: true, force: true });
      await tryRaw(git, ['worktree', 'prune']);
    }
    const updated = await this.store.update(pr.repo, number, { state: 'merged', mergedAt: date, mergeSha, headSha });
    return this.toPullRequest(updated);
  }

  async close(repo: string, number: number): Promise<PullRequest> {
    const pr = await this.getPullRequest(repo, number);
    if (pr.state !== 'open') throw new DockhandError('conflict', `pull request ${pr.repo}#${number} is ${pr.state}`);
    const updated = await this.store.update(pr.repo, number, { state: 'closed', closedAt: this.now().toISOString() });
    return this.toPullRequest(updated);
  }

  async getOutcome(repo: string, number: number, options: OutcomeOptions = {}): Promise<PullRequestOutcome | undefined> {
    const pr = await this.getPullRequest(repo, number);
    if (pr.state === 'open') return undefined;
    if (pr.state === 'closed') return { outcome: 'closed', at: pr.closedAt ?? pr.createdAt };
    const mergedAt = pr.mergedAt ?? pr.createdAt;
    if (pr.mergeSha === undefined) return { outcome: 'merged', at: mergedAt };
    const git = createGit(this.existingRepository(pr.repo));
    const log = await tryRaw(git, ['log', '--format=%H%x00%cI%x00%B%x1e', `${pr.mergeSha}..refs/heads/${pr.base}`]);
    const commits: BranchCommit[] = (log ?? '')
      .split('\x1e')
      .map((entry) => entry.trim())
      .filter(Boolean)
      .map((entry) => {
        const [sha = '', date = '', message = ''] = entry.split('\x00');
        return { sha, date, message };
      });
    const prCommits = await tryRaw(git, ['rev-list', `${pr.mergeSha}^1..${pr.headSha}`]);
    const prShas = [pr.mergeSha, pr.headSha, ...(prCommits ?? '').split('\n').filter(Boolean)];
    const revert = findRevert({ commits, prShas, mergedAt, windowDays: options.revertWindowDays });
    return revert ?? { outcome: 'merged', at: mergedAt };
  }

  private issuesPath(repo: string): string {
    return join(this.dataDir, `${this.repositoryName(repo)}.issues.json`);
  }

  private async readIssues(repo: string): Promise<IssueFile> {
    const path = this.issuesPath(repo);
    if (!existsSync(path)) return [];
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(path, 'utf8'));
    } catch (error) {
      throw new DockhandError('internal', `${path} is not valid JSON`, { cause: error });
    }
    const parsed = IssueFile.safeParse(raw);
    if (!parsed.success) throw new DockhandError('internal', `${path}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return parsed.data;
  }

  async listOpenIssues(repo: string): Promise<Issue[]> {
    const name = this.repositoryName(repo);
    this.existingRepository(name);
    return (await this.readIssues(name))
      .filter((issue) => issue.state === 'open')
      .map((issue) => ({
        number: issue.number,
        title: issue.title,
        body: issue.body,
        labels: issue.labels,
        url: `dockhand-local://${name}/issues/${issue.number}`,
      }));
  }

  /** Adds an issue to the repo's issues.json (for sample repos and tests). */
  async createIssue(repo: string, issue: { title: string; body?: string; labels?: string[] }): Promise<Issue> {
    const name = this.repositoryName(repo);
    this.existingRepository(name);
    const issues = await this.readIssues(name);
    const number = issues.reduce((max, existing) => Math.max(max, existing.number), 0) + 1;
    const entry = { number, title: issue.title, body: issue.body ?? '', state: 'open' as const, labels: issue.labels ?? [] };
    const path = this.issuesPath(name);
    const temporary = `${path}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify([...issues, entry], null, 2)}\n`);
    await rename(temporary, path);
    return { ...entry, url: `dockhand-local://${name}/issues/${number}` };
  }
}

/** The step a copy is at, for git's progress lines (which do not know it). */
interface Step {
  current?: CopyProgress;
}

function progressOf(options: ImportOptions): { onProgress?: (progress: CopyProgress) => void } {
  return options.onProgress ? { onProgress: options.onProgress } : {};
}
