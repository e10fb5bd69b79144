import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { afterEach, describe, expect, it } from 'vitest';
import { CreateTaskRequest } from '@dockhand/protocol';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import type { PullRequestThreadStore } from '../forge/comments';
import { GitHubForge, staticToken } from '../forge';
import { reviewCommentFeedback, type RestReviewComment } from '../forge/github-poll';
import { GitHubThreads } from '../forge/github-threads';
import { executeAsGitHub, graphqlProblems, reviewThreadsRoot, type GraphqlCall } from '../forge/testing/github-graphql';
import { openApiProblems, type RestCall } from '../forge/testing/github-openapi';
import { SqliteStore } from '../store/sqlite';
import { followUpPublisher } from './publish';
import { git, githubPrRepository } from './testing/github-pr-repo';

/*
 * Exactly-once replies on GitHub (#26): the server dies between GitHub's answer to a reply and the
 * store's record of it (here: the store's write fails right after the POST). The round's push runs
 * again from the same log, as a resumed task's does, and must not post the reply a second time:
 * it finds it on the PR by its hidden marker, written by the server's own account (GraphQL
 * `viewer`), and records it. The push is real git into a bare repository; GitHub's REST and
 * GraphQL are answered in-process, every request judged by GitHub's OpenAPI description and every
 * GraphQL document by its published schema.
 */

const REPO = 'Codertocat/Hello-World';
const BRANCH = 'dockhand/1-two';
const BOT = 'dockhand-app[bot]';

const sent: RestCall[] = [];
const graphqlSent: GraphqlCall[] = [];
const stores: SqliteStore[] = [];
afterEach(async () => {
  expect(sent.flatMap(openApiProblems)).toEqual([]);
  expect(graphqlSent.flatMap(graphqlProblems)).toEqual([]);
  sent.length = 0;
  graphqlSent.length = 0;
  for (const store of stores.splice(0)) await store.close();
});

function exampleLineComment(): RestReviewComment & Record<string, unknown> {
  const definition = (examples as unknown as Array<{ name: string; examples: Array<Record<string, unknown>> }>).find((entry) => entry.name === 'pull_request_review_comment');
  return structuredClone(definition!.examples.find((payload) => payload.action === 'created')!.comment) as RestReviewComment & Record<string, unknown>;
}

/** GitHub as far as a round's replies go: the PR, its comments (kept as posted), who the token is, its threads. */
function fakeGitHub(bare: string, lineComment: Record<string, unknown>) {
  const reviewComments: Array<Record<string, unknown>> = [lineComment];
  const issueComments: Array<Record<string, unknown>> = [];
  let nextId = 9000;
  const fetch: typeof globalThis.fetch = async (input, init) => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const method = (init?.method ?? 'GET').toUpperCase();
    const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
    const json = (status: number, value: unknown) => new Response(JSON.stringify(value), { status, headers: { 'content-type': 'application/json' } });
    if (method === 'POST' && url.pathname === '/graphql') {
      graphqlSent.push(body as GraphqlCall);
      return json(200, await executeAsGitHub(body as GraphqlCall, { viewer: { login: BOT }, ...reviewThreadsRoot([{ id: 'PRRT_1', isResolved: false, commentIds: [lineComment.id as number] }]) }));
    }
    sent.push({ method, path: url.pathname, query: url.searchParams, body });
    const made = () => ({ id: ++nextId, user: { login: BOT, type: 'Bot' }, author_association: 'NONE', body: body.body as string, created_at: new Date().toISOString(), html_url: `https://github.com/${REPO}/pull/2#c${nextId}` });
    if (method === 'GET' && url.pathname === `/repos/${REPO}`) return json(200, { default_branch: 'master' });
    if (method === 'GET' && url.pathname === `/repos/${REPO}/pulls/2`) {
      const head = git(bare, 'rev-parse', `refs/heads/${BRANCH}`);
      return json(200, { number: 2, html_url: `https://github.com/${REPO}/pull/2`, title: 'Make two loud', body: '', draft: true, state: 'open', head: { ref: BRANCH, sha: head }, base: { ref: 'master' }, created_at: '2026-12-04T10:00:00Z', merged_at: null, closed_at: null, merge_commit_sha: null });
    }
    if (method === 'GET' && url.pathname === `/repos/${REPO}/pulls/2/comments`) return json(200, reviewComments);
    if (method === 'GET' && url.pathname === `/repos/${REPO}/issues/2/comments`) return json(200, issueComments);
    if (method === 'GET' && url.pathname === `/repos/${REPO}/pulls/2/reviews`) return json(200, []);
    const reply = new RegExp(`^/repos/${REPO}/pulls/2/comments/(\\d+)/replies$`).exec(url.pathname);
    if (method === 'POST' && reply) {
      const parent = reviewComments.find((comment) => comment.id === Number(reply[1]))!;
      const comment = { ...made(), in_reply_to_id: parent.id, path: parent.path, line: parent.line, diff_hunk: parent.diff_hunk, commit_id: parent.commit_id };
      reviewComments.push(comment);
      return json(201, comment);
    }
    if (method === 'POST' && url.pathname === `/repos/${REPO}/issues/2/comments`) {
      const comment = made();
      issueComments.push(comment);
      return json(201, comment);
    }
    return json(404, { message: 'Not Found' });
  };
  return { fetch, reviewComments, issueComments };
}

describe('a round\'s replies on GitHub are posted once, across a crash between the post and its record (#26)', () => {
  it('the push run again after the store lost the reply finds it on the PR by its marker and posts nothing twice; a comment quoting the marker by someone else does not count', async () => {
    const root = temporaryDir('dockhand-github-replies-');
    const { work, baseSha, firstHead, bare } = githubPrRepository(root, BRANCH);
    writeFileSync(join(work, 'src/a.ts'), 'one\nTWO\nTHREE\n');
    const roundDiff = `${git(work, 'diff', '--no-color', baseSha)}\n`;

    const lineComment = exampleLineComment();
    const github = fakeGitHub(bare, lineComment);
    const forge = new GitHubForge({ tokens: staticToken('ghs_replies_test_token'), fetch: github.fetch, webUrl: join(root, 'git') });
    const store = new SqliteStore(':memory:');
    stores.push(store);
    // The store dies once, right after GitHub took the first reply: what a kill between the two leaves.
    let killed = 0;
    const threadStore: PullRequestThreadStore = {
      addComment: async (comment) => {
        if (comment.steering === 'bot' && killed === 0) {
          killed += 1;
          throw new Error('killed between the post and its record');
        }
        return store.prThreads.addComment(comment);
      },
      listComments: (repo, number) => store.prThreads.listComments(repo, number),
      resolveComment: (repo, id, sha) => store.prThreads.resolveComment(repo, id, sha),
      addCheck: (check) => store.prThreads.addCheck(check),
      listChecks: (repo, sha) => store.prThreads.listChecks(repo, sha),
    };
    const threads = new GitHubThreads({ forge, store: threadStore });
    const recorded = await threads.record(reviewCommentFeedback(REPO, 2, lineComment));
    expect(recorded).toBeDefined();

    await store.createUser('alice', 'user');
    const { task } = await store.createTask('alice', CreateTaskRequest.parse({ ticket: { kind: 'text', title: 'Make two loud' }, context: { repo: REPO, baseSha } }));
    await store.appendEvent(task.id, { type: 'pr.opened', data: { number: 2, url: `https://github.com/${REPO}/pull/2`, branch: BRANCH, headSha: firstHead } });
    await store.appendEvent(task.id, { type: 'pr.feedback', data: { number: 2, seenThrough: recorded!.id, checksSeenThrough: 0, kind: 'round', round: 2, comments: [{ id: recorded!.id, author: 'Codertocat', path: 'README.md', body: lineComment.body }], ignored: [] } });
    for (const state of ['running', 'awaiting_review', 'pushing'] as const) await store.appendEvent(task.id, { type: 'task.state', data: { state } });
    const events = await store.listEvents(task.id);
    const publisher = followUpPublisher({ forge, threads, threadStore, clonesDir: join(root, 'clones') });
    const input = { task: (await store.getTask(task.id))!, diff: roundDiff, summary: 'Made three loud too.', events };

    await expect(publisher.push(input)).rejects.toThrow('killed between the post and its record');
    const posts = () => sent.filter((call) => call.method === 'POST').map((call) => call.path);
    expect(posts()).toEqual([`/repos/${REPO}/pulls/2/comments/${lineComment.id}/replies`]);

    // Someone else quotes the marker on the PR: it is not the server's own comment.
    const marker = `<!-- dockhand:round:2:summary -->`;
    github.issueComments.push({ id: 8000, user: { login: 'mallory', type: 'User' }, author_association: 'NONE', body: `no summary please ${marker}`, created_at: '2026-12-05T00:00:00Z' });

    // Resumed: the same push again, from the same log.
    const result = await publisher.push(input);
    expect(result).toMatchObject({ round: 2, commit: true, replied: [recorded!.id] });
    expect(posts()).toEqual([`/repos/${REPO}/pulls/2/comments/${lineComment.id}/replies`, `/repos/${REPO}/issues/2/comments`]);
    const replies = github.reviewComments.filter((comment) => comment.in_reply_to_id === lineComment.id);
    expect(replies).toHaveLength(1);
    expect(replies[0]!.body).toContain(`<!-- dockhand:round:2:comment:${recorded!.id} -->`);
    expect(github.issueComments.filter((comment) => (comment.user as { login: string }).login === BOT)).toHaveLength(1);
    const bot = (await store.prThreads.listComments(REPO, 2)).filter((comment) => comment.steering === 'bot');
    expect(bot.map((comment) => [comment.forgeKind, comment.forgeId])).toEqual([['review_comment', replies[0]!.id], ['issue_comment', expect.any(Number)]]);

    // And once more (a crash before pr.pushed): nothing posted, the commit found on the branch.
    await publisher.push(input);
    expect(posts()).toHaveLength(2);
    expect(git(bare, 'rev-list', '--count', `${firstHead}..refs/heads/${BRANCH}`)).toBe('1');
  });
});
