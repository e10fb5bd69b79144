import type { Task } from '@dockhand/protocol';
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

/** A task's PR on GitHub is `https://HOST/<owner>/<name>/pull/<n>`. */
function pullPath(task: Pick<Task, 'prUrl'>): string | undefined {
  const match = task.prUrl ? /\/([^/]+\/[^/]+)\/pull\/(\d+)\/?$/.exec(task.prUrl) : null;
  return match ? `${match[1]!.toLowerCase()}#${match[2]}` : undefined;
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
    const recorded = await options.threads.record(feedback);
    if (!recorded) return false;
    // Answer GitHub now (it waits 10 s for a delivery's answer); the pass runs behind it.
    void options.follow().catch((error: unknown) => options.logger?.warn({ err: error }, 'PR follow-up after a GitHub delivery failed'));
    return true;
  };
}
