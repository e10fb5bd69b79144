import type { Octokit } from '@octokit/rest';
import type { GitHubRepo } from './github-auth';

/*
 * Resolving a review thread a follow-up round addressed, on GitHub. REST cannot (a thread is not a
 * REST object); GraphQL's `resolveReviewThread` takes the thread's node id, which is found from the
 * review comment's REST id through `pullRequest.reviewThreads` (each thread's comments carry their
 * `fullDatabaseId`, the REST id as a BigInt string; `databaseId` is deprecated for 64-bit ids).
 * The documents below are validated in tests against GitHub's published schema
 * (@octokit/graphql-schema).
 *
 * What it will not do: resolve a thread it cannot find (a comment deleted since), reopen one, or
 * fail a push over it. An App without the permission (HTTP 403, or FORBIDDEN in the GraphQL
 * errors, or `viewerCanResolve: false`) is answered `forbidden`, for the caller to log and skip.
 */

export const REVIEW_THREADS_QUERY = `query reviewThreads($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id
          isResolved
          viewerCanResolve
          comments(first: 100) { nodes { fullDatabaseId } }
        }
      }
    }
  }
}`;

export const RESOLVE_REVIEW_THREAD_MUTATION = `mutation resolveReviewThread($threadId: ID!) {
  resolveReviewThread(input: { threadId: $threadId }) {
    thread { id isResolved }
  }
}`;

/** Who the token is (the server's own comments are the ones this login wrote). */
export const VIEWER_QUERY = `query viewerLogin {
  viewer { login }
}`;

interface ThreadsAnswer {
  repository: {
    pullRequest: {
      reviewThreads: {
        pageInfo: { hasNextPage: boolean; endCursor: string | null };
        nodes: Array<{ id: string; isResolved: boolean; viewerCanResolve: boolean; comments: { nodes: Array<{ fullDatabaseId: string | number | null } | null> | null } } | null> | null;
      };
    } | null;
  } | null;
}

interface ResolveAnswer {
  resolveReviewThread: { thread: { id: string; isResolved: boolean } | null } | null;
}

export type ResolveOutcome =
  | { outcome: 'resolved' | 'already_resolved'; threadId: string }
  | { outcome: 'not_found' }
  | { outcome: 'forbidden'; reason: string };

/** Pages of threads read at most (100 threads a page). */
const MAX_PAGES = 10;

/** An HTTP 403, or a GraphQL answer whose errors say FORBIDDEN: the token may not do it. */
export function forbiddenReason(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  if ('status' in error && error.status === 403) return error.message;
  const errors = 'errors' in error && Array.isArray(error.errors) ? (error.errors as Array<{ type?: string; message?: string }>) : [];
  const forbidden = errors.find((entry) => entry.type === 'FORBIDDEN');
  return forbidden ? forbidden.message ?? 'FORBIDDEN' : undefined;
}

/** Resolves the thread holding review comment `commentId` (its REST id) on PR `number`. */
export async function resolveReviewThread(octokit: Octokit, repo: GitHubRepo, number: number, commentId: number): Promise<ResolveOutcome> {
  try {
    let after: string | null = null;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const answer: ThreadsAnswer = await octokit.graphql<ThreadsAnswer>(REVIEW_THREADS_QUERY, { owner: repo.owner, name: repo.name, number, after });
      const threads = answer.repository?.pullRequest?.reviewThreads;
      if (!threads) return { outcome: 'not_found' };
      const thread = (threads.nodes ?? []).find((node) => node?.comments.nodes?.some((comment) => comment?.fullDatabaseId !== null && String(comment?.fullDatabaseId) === String(commentId)));
      if (thread) {
        if (thread.isResolved) return { outcome: 'already_resolved', threadId: thread.id };
        if (!thread.viewerCanResolve) return { outcome: 'forbidden', reason: 'viewerCanResolve is false for this token (the App needs pull requests: write, or the token is not a collaborator)' };
        const resolved: ResolveAnswer = await octokit.graphql<ResolveAnswer>(RESOLVE_REVIEW_THREAD_MUTATION, { threadId: thread.id });
        const done = resolved.resolveReviewThread?.thread;
        return done?.isResolved ? { outcome: 'resolved', threadId: done.id } : { outcome: 'not_found' };
      }
      if (!threads.pageInfo.hasNextPage || !threads.pageInfo.endCursor) break;
      after = threads.pageInfo.endCursor;
    }
    return { outcome: 'not_found' };
  } catch (error) {
    const reason = forbiddenReason(error);
    if (reason !== undefined) return { outcome: 'forbidden', reason };
    throw error;
  }
}
