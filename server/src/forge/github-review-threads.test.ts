import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../store/sqlite';
import { GitHubForge } from './github-forge';
import { staticToken } from './github-auth';
import { RESOLVE_REVIEW_THREAD_MUTATION, REVIEW_THREADS_QUERY } from './github-review-threads';
import { GitHubThreads } from './github-threads';
import { executeAsGitHub, graphqlProblems, reviewThreadsRoot, type GraphqlCall, type ReviewThreadData } from './testing/github-graphql';

/*
 * Resolving the review threads a round addressed on GitHub (#26): GraphQL only. Every document the
 * forge sends is validated against GitHub's published schema (@octokit/graphql-schema), and the
 * answers are that schema executing the document over our test threads, so a field GitHub does not
 * have, or reads under another name, fails here.
 */

const REPO = 'Codertocat/Hello-World';
const calls: GraphqlCall[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  expect(calls.flatMap(graphqlProblems)).toEqual([]);
  calls.length = 0;
  for (const store of stores.splice(0)) await store.close();
});

function graphqlFetch(root: Record<string, unknown>, options: { forbidden?: 'graphql' | 'http' } = {}): typeof fetch {
  return async (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    if (url.pathname !== '/graphql' || init?.method !== 'POST') return new Response(JSON.stringify({ message: 'Not Found' }), { status: 404, headers: { 'content-type': 'application/json' } });
    const call = JSON.parse(String(init.body)) as GraphqlCall;
    calls.push(call);
    const json = (status: number, value: unknown) => new Response(JSON.stringify(value), { status, headers: { 'content-type': 'application/json' } });
    const mutation = /^\s*mutation\b/.test(call.query);
    // What GitHub answers an App installation without the pull requests permission.
    if (mutation && options.forbidden === 'graphql') return json(200, { data: { resolveReviewThread: null }, errors: [{ type: 'FORBIDDEN', path: ['resolveReviewThread'], locations: [{ line: 2, column: 3 }], message: 'Resource not accessible by integration' }] });
    if (mutation && options.forbidden === 'http') return json(403, { message: 'Resource not accessible by integration', documentation_url: 'https://docs.github.com/graphql' });
    return json(200, await executeAsGitHub(call, root));
  };
}

function threads(): ReviewThreadData[] {
  return [
    { id: 'PRRT_kwDOA1', isResolved: false, commentIds: [101, 102] },
    { id: 'PRRT_kwDOA2', isResolved: true, commentIds: [201] },
    { id: 'PRRT_kwDOA3', isResolved: false, commentIds: [4_000_000_301, 302] },
  ];
}

describe('GitHub review threads resolved through GraphQL, judged by GitHub\'s schema', () => {
  it('the documents validate against the published schema', () => {
    expect(graphqlProblems({ query: REVIEW_THREADS_QUERY })).toEqual([]);
    expect(graphqlProblems({ query: RESOLVE_REVIEW_THREAD_MUTATION })).toEqual([]);
    // The judge can fail: a field GitHub's PullRequestReviewThread does not have.
    expect(graphqlProblems({ query: REVIEW_THREADS_QUERY.replace('isResolved', 'resolved') })).not.toEqual([]);
  });

  it('finds the thread of a review comment across pages (a 64-bit id too) and resolves it; an already resolved thread is left as it is', async () => {
    const data = threads();
    const resolved: string[] = [];
    const forge = new GitHubForge({ tokens: staticToken('ghs_t'), fetch: graphqlFetch(reviewThreadsRoot(data, { pageSize: 1, resolved })) });
    expect(await forge.resolveReviewThread(REPO, 2, 4_000_000_301)).toEqual({ outcome: 'resolved', threadId: 'PRRT_kwDOA3' });
    expect(resolved).toEqual(['PRRT_kwDOA3']);
    // Three pages read, then the mutation.
    expect(calls.map((call) => call.variables?.after ?? null)).toEqual([null, '1', '2', null]);
    expect(calls.at(-1)?.variables).toEqual({ threadId: 'PRRT_kwDOA3' });
    calls.length = 0;
    expect(await forge.resolveReviewThread(REPO, 2, 201)).toEqual({ outcome: 'already_resolved', threadId: 'PRRT_kwDOA2' });
    expect(await forge.resolveReviewThread(REPO, 2, 999)).toEqual({ outcome: 'not_found' });
    expect(resolved).toEqual(['PRRT_kwDOA3']);
  });

  it('an App that may not resolve (FORBIDDEN in the GraphQL errors, an HTTP 403, viewerCanResolve false) is skipped with a log line; the thread stays open', async () => {
    for (const forbidden of ['graphql', 'http'] as const) {
      const forge = new GitHubForge({ tokens: staticToken('ghs_t'), fetch: graphqlFetch(reviewThreadsRoot(threads()), { forbidden }) });
      expect(await forge.resolveReviewThread(REPO, 2, 102)).toMatchObject({ outcome: 'forbidden', reason: expect.stringContaining('Resource not accessible by integration') });
    }
    const cannot = threads();
    cannot[0]!.viewerCanResolve = false;
    const forge = new GitHubForge({ tokens: staticToken('ghs_t'), fetch: graphqlFetch(reviewThreadsRoot(cannot), { forbidden: 'graphql' }) });
    expect(await forge.resolveReviewThread(REPO, 2, 101)).toMatchObject({ outcome: 'forbidden', reason: expect.stringContaining('viewerCanResolve') });
    expect(calls.at(-1)?.query).toBe(REVIEW_THREADS_QUERY);

    // Through the follower's threads: a line comment's thread is tried and the refusal logged; a PR comment has no thread to resolve.
    const store = new SqliteStore(':memory:');
    stores.push(store);
    const logged: Array<{ level: string; message: string; fields: Record<string, unknown> }> = [];
    const logger = { warn: (fields: Record<string, unknown>, message: string) => logged.push({ level: 'warn', message, fields }), info: (fields: Record<string, unknown>, message: string) => logged.push({ level: 'info', message, fields }) };
    const githubThreads = new GitHubThreads({ forge: new GitHubForge({ tokens: staticToken('ghs_t'), fetch: graphqlFetch(reviewThreadsRoot(threads()), { forbidden: 'graphql' }) }), store: store.prThreads, logger: logger as never });
    const base = { repo: REPO, number: 2, author: 'Codertocat', kind: 'comment' as const, steering: 'allowed' as const, headSha: 'a'.repeat(40), createdAt: '2026-12-05T00:00:00Z' };
    const line = await store.prThreads.addComment({ ...base, body: 'rename this', path: 'README.md', line: 1, forgeId: 102, forgeKind: 'review_comment' });
    const general = await store.prThreads.addComment({ ...base, body: 'and the title', forgeId: 555, forgeKind: 'issue_comment' });
    const pr = { repo: REPO, number: 2, url: `https://github.com/${REPO}/pull/2`, title: 't', body: '', branch: 'b', base: 'master', headSha: 'a'.repeat(40), draft: false, state: 'open' as const, createdAt: '' };
    calls.length = 0;
    await githubThreads.resolveThread(pr, general.id);
    expect(calls).toEqual([]);
    await githubThreads.resolveThread(pr, line.id);
    expect(calls.map((call) => call.query)).toEqual([REVIEW_THREADS_QUERY, RESOLVE_REVIEW_THREAD_MUTATION]);
    expect(logged).toEqual([{ level: 'warn', message: expect.stringMatching(/may not \(skipped\)/), fields: expect.objectContaining({ commentId: 102, reason: expect.stringContaining('Resource not accessible') }) }]);
  });
});
