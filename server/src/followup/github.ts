import type { Task } from '@dockhand/protocol';
import type { GitHubForge } from '../forge/github-forge';
import type { GitHubThreads } from '../forge/github-threads';
import type { GitHubFeedback } from '../forge/webhook';
import type { Logger } from '../log';
import type { Store } from '../store/types';

/*
 * What GitHub reports on a PR (a webhook delivery, or the polling fallback) reaches the PR follower
 * the way a local-forge comment does: recorded in the store (`GitHubThreads.record`: who may steer
 * is decided there, and a delivery seen twice is one record), then the follower looks at the PR at
 * once. Only PRs a task opened are recorded; a comment on anyone else's PR is not Dockhand's, and
 * a check is kept when its repository has a followed PR (a run on a base commit is triage evidence).
 */

type Delivered = Exclude<GitHubFeedback, { kind: 'outcome' }>;

/** A task's PR on GitHub is `https://HOST/<owner>/<name>/pull/<n>`; GitHub's names are case-insensitive. */
function pullPath(task: Pick<Task, 'prUrl'>): string | undefined {
  const link = pullRequestOf(task);
  return link ? `${link.repo.toLowerCase()}#${link.number}` : undefined;
}

// A cancelled task with a PR was cancelled in a round: the follower takes it back to pr_open.
const ENDED = new Set(['merged', 'closed', 'reverted']);

/** Tasks whose GitHub PR is still followed (open, or in a round): `owner/name#n` → task. */
export async function followedPullRequests(store: Pick<Store, 'listTasks'>): Promise<Map<string, Task>> {
  const followed = new Map<string, Task>();
  let cursor: string | undefined;
  do {
    const page = await store.listTasks({ limit: 200, ...(cursor ? { cursor } : {}) });
    for (const task of page.tasks) {
      const key = pullPath(task);
      if (key && !ENDED.has(task.state)) followed.set(key, task);
    }
    cursor = page.nextCursor;
  } while (cursor);
  return followed;
}

export interface GitHubFeedbackOptions {
  threads: GitHubThreads;
  store: Pick<Store, 'listTasks'>;
  /** The follower's pass (it reads what was recorded). */
  follow: () => Promise<unknown>;
  /** How long a delivery's answer waits for its recording (default 5 s; GitHub gives up at 10). */
  answerWithinMs?: number;
  logger?: Logger;
}

/** The webhook route's `onFeedback` (and the poller's): true when something new was recorded. */
export function githubFeedbackSink(options: GitHubFeedbackOptions): (feedback: Delivered) => Promise<boolean> {
  return async (feedback) => {
    const followed = await followedPullRequests(options.store);
    const repo = feedback.repo.toLowerCase();
    const ours = feedback.kind === 'check'
      ? [...followed.keys()].some((key) => key.startsWith(`${repo}#`))
      : followed.has(`${repo}#${feedback.number}`);
    if (!ours) return false;
    const follow = () => void options.follow().catch((error: unknown) => options.logger?.warn({ err: error }, 'PR follow-up after a GitHub delivery failed'));
    // A red Actions run's jobs' logs are read as it is recorded: GitHub waits 10 s for a delivery's
    // answer, so past `answerWithinMs` the answer goes and the recording (then the pass) goes on behind it.
    const recording = options.threads.record(feedback);
    const late = Symbol('late');
    let timer: NodeJS.Timeout | undefined;
    const first = await Promise.race([recording, new Promise<typeof late>((resolve) => { timer = setTimeout(() => resolve(late), options.answerWithinMs ?? 5000); })]).finally(() => clearTimeout(timer));
    if (first === late) {
      void recording.then((recorded) => recorded && follow(), (error: unknown) => options.logger?.warn({ err: error }, 'recording a GitHub delivery failed'));
      return true;
    }
    if (!first) return false;
    // Answer GitHub now; the pass runs behind it.
    follow();
    return true;
  };
}

/** `owner/name` and number of a task's GitHub PR, as its link spells them. */
export function pullRequestOf(task: Pick<Task, 'prUrl'>): { repo: string; number: number } | undefined {
  const match = task.prUrl ? /\/([^/]+\/[^/]+)\/pull\/(\d+)\/?$/.exec(task.prUrl) : null;
  return match ? { repo: match[1]!, number: Number(match[2]) } : undefined;
}

export interface GitHubPollerOptions {
  forge: Pick<GitHubForge, 'getPullRequest' | 'pullRequestFeedback' | 'completedChecks' | 'commitStatuses'>;
  threads: GitHubThreads;
  store: Pick<Store, 'listTasks'>;
  /** The follower's pass, after a poll that recorded something. */
  follow: () => Promise<unknown>;
  /** Default 60 s (GitHub's REST rate limit is 5,000 requests an hour; a poll is 8 per followed PR). */
  intervalMs?: number;
  /** On a fleet, only the leader polls. */
  leader?: () => Promise<boolean>;
  logger?: Logger;
}

/**
 * The polling fallback when GitHub sends no webhooks: every interval, each followed PR's line
 * comments, general comments, reviews and the completed check runs on its head and its base are
 * read back (with the commit statuses on both) and recorded as a delivery would be (GitHub's ids: what a webhook already brought is
 * not recorded twice, nor what an earlier poll found).
 */
export class GitHubPoller {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(private readonly options: GitHubPollerOptions) {}

  start(): void {
    this.timer = setInterval(() => void this.pollOnce().catch((error: unknown) => this.options.logger?.warn({ err: error }, 'GitHub PR poll failed')), this.options.intervalMs ?? 60_000);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** One poll of every followed PR; returns how many new comments, reviews and checks were recorded. */
  async pollOnce(): Promise<number> {
    this.running ??= this.poll().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async poll(): Promise<number> {
    if (this.options.leader && !(await this.options.leader())) return 0;
    const { forge, threads } = this.options;
    let recorded = 0;
    for (const task of (await followedPullRequests(this.options.store)).values()) {
      const link = pullRequestOf(task);
      if (!link) continue;
      try {
        const pr = await forge.getPullRequest(link.repo, link.number);
        if (pr.state !== 'open') continue;
        const found = [
          ...(await forge.pullRequestFeedback(pr.repo, pr.number)),
          ...(await forge.completedChecks(pr.repo, pr.headSha)),
          ...(await forge.completedChecks(pr.repo, task.context.baseSha)),
          ...(await forge.commitStatuses(pr.repo, pr.headSha)),
          ...(await forge.commitStatuses(pr.repo, task.context.baseSha)),
        ];
        for (const item of found) if (await threads.record(item)) recorded += 1;
      } catch (error) {
        this.options.logger?.warn({ err: error, taskId: task.id }, 'polling the GitHub PR failed');
      }
    }
    if (recorded > 0) await this.options.follow();
    return recorded;
  }
}
