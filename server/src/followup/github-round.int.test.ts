import { join } from 'node:path';
import { Webhooks } from '@octokit/webhooks';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { afterEach, describe, expect, it } from 'vitest';
import { CreateTaskRequest, type TaskEvent } from '@dockhand/protocol';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import { loadConfig } from '../config';
import { GitHubForge, staticToken } from '../forge';
import { startHttpGitServer, type HttpGitServer } from '../forge/testing/http-git-server';
import { openApiProblems, type RestCall } from '../forge/testing/github-openapi';
import { executeAsGitHub, graphqlProblems, reviewThreadsRoot, type GraphqlCall } from '../forge/testing/github-graphql';
import { createFleet, type Fleet } from '../runner/fleet';
import { git, githubPrRepository } from './testing/github-pr-repo';
import { FakeSandboxProvider, ScriptedAgent, editLikeTheAgent } from '../runner/testing/fakes';

/*
 * A whole follow-up round on a GitHub PR: the OWNER's line comment arrives as GitHub's example
 * delivery (signed, through the real route), round 2 starts at the PR's head, is approved, and
 * its ONE new commit is pushed over smart HTTP with the token (`git http-backend` behind Basic
 * auth, as GitHub takes an installation token) as a fast-forward of the PR's branch; the reply
 * goes into the comment's thread and a summary onto the PR, through REST checked against GitHub's
 * OpenAPI description. The sandbox and the agent are the runner's fakes.
 */

const SECRET = 'webhook-secret-for-tests-0123456789';
const TOKEN = 'ghs_round_test_token_0123456789';
const REPO = 'Codertocat/Hello-World';
const BRANCH = 'dockhand/1-two';

const sent: RestCall[] = [];
const graphqlSent: GraphqlCall[] = [];
let fleet: Fleet | undefined;
let server: HttpGitServer | undefined;
afterEach(async () => {
  await fleet?.close();
  await server?.close();
  fleet = undefined;
  server = undefined;
  expect(sent.flatMap(openApiProblems)).toEqual([]);
  expect(graphqlSent.flatMap(graphqlProblems)).toEqual([]);
  sent.length = 0;
  graphqlSent.length = 0;
});

function exampleComment(): Record<string, unknown> {
  const definition = (examples as unknown as Array<{ name: string; examples: Array<Record<string, unknown>> }>).find((entry) => entry.name === 'pull_request_review_comment');
  return structuredClone(definition!.examples.find((payload) => payload.action === 'created')!);
}

describe('a GitHub PR\'s follow-up round, end to end on real git (#26)', { timeout: 120_000 }, () => {
  it('comment delivery → round 2 at the PR head → approve → one fast-forward commit pushed with the token → reply in the thread and a summary', async () => {
    const root = temporaryDir('dockhand-github-round-');
    // The task's first run, as already pushed: PR #2's branch holds TWO.
    const { work, baseSha, firstHead, bare } = githubPrRepository(root, BRANCH);
    const firstDiff = `${git(work, 'diff', '--no-color', baseSha, firstHead)}\n`;
    server = await startHttpGitServer(join(root, 'git'), TOKEN);
    const branchHead = () => git(bare, 'rev-parse', `refs/heads/${BRANCH}`);

    let nextId = 9000;
    const payload = exampleComment();
    const comment = payload.comment as { id: number; body: string };
    // The PR's review threads on GitHub's GraphQL side: the comment's thread, and one other.
    const resolvedThreads: string[] = [];
    const threadsRoot = reviewThreadsRoot([{ id: 'PRRT_other', isResolved: false, commentIds: [1] }, { id: 'PRRT_comment', isResolved: false, commentIds: [comment.id] }], { resolved: resolvedThreads });
    const githubFetch: typeof fetch = async (input, init) => {
      const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      const method = (init?.method ?? 'GET').toUpperCase();
      const body = typeof init?.body === 'string' ? JSON.parse(init.body) : undefined;
      const json = (status: number, value: unknown) => new Response(JSON.stringify(value), { status, headers: { 'content-type': 'application/json' } });
      if (method === 'POST' && url.pathname === '/graphql') {
        graphqlSent.push(body as GraphqlCall);
        return json(200, await executeAsGitHub(body as GraphqlCall, { viewer: { login: 'dockhand-app[bot]' }, ...threadsRoot }));
      }
      sent.push({ method, path: url.pathname, query: url.searchParams, body });
      if (method === 'GET' && url.pathname === `/repos/${REPO}`) return json(200, { default_branch: 'master' });
      // Before each reply the PR's comments are searched for it (exactly once across a crash): none yet.
      if (method === 'GET' && [`/repos/${REPO}/pulls/2/comments`, `/repos/${REPO}/issues/2/comments`, `/repos/${REPO}/pulls/2/reviews`].includes(url.pathname)) return json(200, []);
      if (method === 'GET' && url.pathname === `/repos/${REPO}/pulls/2`) {
        return json(200, {
          number: 2, html_url: `https://github.com/${REPO}/pull/2`, title: 'Make two loud', body: '', draft: true, state: 'open',
          head: { ref: BRANCH, sha: branchHead() }, base: { ref: 'master' }, created_at: '2026-12-04T10:00:00Z', merged_at: null, closed_at: null, merge_commit_sha: null,
        });
      }
      if (method === 'POST') {
        const id = ++nextId;
        return json(201, { id, html_url: `https://github.com/${REPO}/pull/2#discussion_r${id}`, created_at: new Date().toISOString(), body: body?.body });
      }
      return json(404, { message: 'Not Found' });
    };

    const config = loadConfig({ DOCKHAND_DATA_DIR: join(root, 'data'), DOCKHAND_GITHUB_WEBHOOK_SECRET: SECRET });
    const forge = new GitHubForge({ tokens: staticToken(TOKEN), fetch: githubFetch, webUrl: server.baseUrl });
    const seen: string[] = [];
    const agent = new ScriptedAgent(async (input) => {
      seen.push((await input.sandbox.readFile('src/a.ts')).toString());
      await editLikeTheAgent(input, 'three', 'THREE');
      // Model text with a mention, raw HTML and a trailer-shaped line: none of them reaches GitHub active.
      return { outcome: 'finished', summary: 'Made three loud too. @octocat merge it <img src=x onerror=alert(1)>\nSigned-off-by: Mallory <m@example.com>', diff: await input.sandbox.diff() };
    });
    fleet = await createFleet(config, { sandboxes: new FakeSandboxProvider(), agent, forge });
    const { store } = fleet;
    await store.createUser('alice', 'user');
    const token = (await store.createToken('alice')).token;
    const { task } = await store.createTask('alice', CreateTaskRequest.parse({ ticket: { kind: 'text', title: 'Make two loud' }, context: { repo: REPO, baseSha } }));
    await store.setResult(task.id, { diff: firstDiff, summary: 'Made two loud.' });
    for (const state of ['running', 'awaiting_review', 'pushing'] as const) await store.appendEvent(task.id, { type: 'task.state', data: { state } });
    await store.appendEvent(task.id, { type: 'pr.opened', data: { number: 2, url: `https://github.com/${REPO}/pull/2`, branch: BRANCH, headSha: firstHead } });
    await store.appendEvent(task.id, { type: 'task.state', data: { state: 'pr_open' } });

    const delivery = JSON.stringify(payload, null, 2);
    const response = await fleet.app.inject({
      method: 'POST', url: '/v1/webhooks/github', payload: delivery,
      headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request_review_comment', 'x-github-delivery': 'd-1', 'x-hub-signature-256': await new Webhooks({ secret: SECRET }).sign(delivery) },
    });
    expect(response.statusCode).toBe(202);
    await fleet.follower!.pollOnce();
    expect((await store.getTask(task.id))!.state).toBe('running');

    await fleet.runner.run(task.id, new AbortController().signal);
    expect(seen).toEqual(['one\nTWO\nthree\n']);
    expect((await store.getTask(task.id))!.state).toBe('awaiting_review');
    const approved = await fleet.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/review`, headers: { authorization: `Bearer ${token}` }, payload: { action: 'approve', comments: [] } });
    expect(approved.statusCode).toBeLessThan(300);
    await fleet.runner.run(task.id, new AbortController().signal);

    const events: TaskEvent[] = await store.listEvents(task.id);
    expect((await store.getTask(task.id))!.state).toBe('pr_open');
    const head = branchHead();
    expect(events.filter((event) => event.type === 'pr.pushed')).toMatchObject([{ data: { round: 2, number: 2, headSha: head, commit: true } }]);
    // One new commit, a fast-forward of the first push, holding only this round's change.
    expect(git(bare, 'rev-parse', `${head}^`)).toBe(firstHead);
    expect(git(bare, 'show', `${head}:src/a.ts`)).toBe('one\nTWO\nTHREE');
    expect(server.stats.authorized).toBeGreaterThan(0);
    const posted = sent.filter((call) => call.method === 'POST');
    expect(posted.map((call) => call.path)).toEqual([`/repos/${REPO}/pulls/2/comments/${comment.id}/replies`, `/repos/${REPO}/issues/2/comments`]);
    expect(posted[0]!.body).toMatchObject({ body: expect.stringContaining(`https://github.com/${REPO}/commit/${head}`) });
    expect(posted[1]!.body).toMatchObject({ body: expect.stringMatching(/^Follow-up \(round 2\)/) });
    const reply = (posted[0]!.body as { body: string }).body;
    expect(reply).toContain('> Made three loud too.');
    expect(reply).not.toMatch(/@octocat|<img/);
    expect(git(bare, 'log', '-1', '--format=%B', head)).not.toContain('Signed-off-by: Mallory');
    // The thread the round addressed is resolved on GitHub (GraphQL), the other one is not.
    expect(resolvedThreads).toEqual(['PRRT_comment']);
  });
});
