import type { Task } from '@dockhand/protocol';
import { PullRequestThreads, type Stewards } from '../forge/comments';
import type { LocalForge } from '../forge/local-forge';
import type { PullRequest } from '../forge/types';
import type { RepoStore, Store } from '../store/types';

/**
 * The task a PR of the local forge belongs to: the one whose PR link is the PR's (the task's
 * projection keeps it from `pr.opened`). Undefined for a PR no task opened.
 */
export async function taskOfPullRequest(store: Store, pr: Pick<PullRequest, 'repo' | 'url'>): Promise<Task | undefined> {
  let cursor: string | undefined;
  do {
    const page = await store.listTasks({ repo: pr.repo, limit: 200, ...(cursor ? { cursor } : {}) });
    const found = page.tasks.find((task) => task.prUrl === pr.url);
    if (found) return found;
    cursor = page.nextCursor;
  } while (cursor);
  return undefined;
}

/** Who may steer a PR's task: its requester, and the registration's owners and listed submitters. */
export async function stewardsOf(store: Store & RepoStore, pr: PullRequest): Promise<Stewards> {
  const [registration, task] = await Promise.all([store.getRepo(pr.repo), taskOfPullRequest(store, pr)]);
  return {
    ...(task ? { requester: task.owner } : {}),
    owners: registration?.owners ?? [],
    submitters: registration?.submitters ?? [],
  };
}

/** The local forge's PR threads on the fleet's store. */
export function localThreads(options: { forge: LocalForge; store: Store & RepoStore; known?: readonly string[] }): PullRequestThreads {
  return new PullRequestThreads({
    forge: options.forge,
    store: options.store.prThreads,
    stewards: (_repo, pr) => stewardsOf(options.store, pr),
    ...(options.known ? { known: options.known } : {}),
  });
}
