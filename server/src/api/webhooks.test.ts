import { Webhooks } from '@octokit/webhooks';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { afterEach, describe, expect, it } from 'vitest';
import type { GitHubFeedback, PullRequestWebhookOutcome } from '../forge';
import { harness, type Harness } from './test-support';

const SECRET = 'webhook-secret-for-tests-0123456789';
const webhooks = new Webhooks({ secret: SECRET });

interface Example { action?: string; [key: string]: unknown }
const exampleOf = (name: string, action: string): Example => {
  const found = (examples as unknown as Array<{ name: string; examples: Example[] }>).find((definition) => definition.name === name)?.examples.find((payload) => payload.action === action);
  if (!found) throw new Error(`no published ${name}.${action} example`);
  return found;
};

/** A published delivery as GitHub sends it: pretty-printed bytes (the signature is over these exact bytes). */
const delivery = (name: string, action: string) => JSON.stringify(exampleOf(name, action), null, 2);

describe('POST /v1/webhooks/github', () => {
  let h: Harness;
  let outcomes: PullRequestWebhookOutcome[];
  let feedback: GitHubFeedback[];
  afterEach(async () => h.close());

  async function start(): Promise<void> {
    outcomes = [];
    feedback = [];
    h = await harness({
      deps: { webhooks: { githubSecret: SECRET, onPullRequest: async (outcome) => void outcomes.push(outcome), onFeedback: async (item) => void feedback.push(item) } },
    });
  }

  const post = async (name: string, body: string, signature?: string) =>
    h.app.inject({
      method: 'POST',
      url: '/v1/webhooks/github',
      headers: { 'content-type': 'application/json', 'x-github-event': name, ...(signature ? { 'x-hub-signature-256': signature } : {}) },
      payload: body,
    });

  it('accepts a delivery signed over its raw bytes and hands the outcome on, without a bearer token', async () => {
    await start();
    const body = delivery('pull_request', 'closed');
    const response = await post('pull_request', body, await webhooks.sign(body));
    expect(response.statusCode).toBe(202);
    expect(response.json()).toEqual({ accepted: true, kinds: ['outcome'] });
    const pull = exampleOf('pull_request', 'closed').pull_request as { number: number; head: { ref: string } };
    expect(outcomes).toMatchObject([{ number: pull.number, branch: pull.head.ref }]);
  });

  it('hands a line comment and a finished check to the follower', async () => {
    await start();
    const comment = delivery('pull_request_review_comment', 'created');
    expect((await post('pull_request_review_comment', comment, await webhooks.sign(comment))).json()).toEqual({ accepted: true, kinds: ['comment'] });
    const check = delivery('check_run', 'completed');
    expect((await post('check_run', check, await webhooks.sign(check))).json()).toEqual({ accepted: true, kinds: ['check'] });
    expect(feedback.map((item) => item.kind)).toEqual(['comment', 'check']);
    expect(outcomes).toEqual([]);
  });

  it('refuses a bad signature (or a re-serialised body) with 401 and does nothing', async () => {
    await start();
    const body = delivery('pull_request', 'closed');
    const resigned = await post('pull_request', body, await webhooks.sign(JSON.stringify(JSON.parse(body))));
    expect(resigned.statusCode).toBe(401);
    expect(resigned.json().error).toMatchObject({ code: 'unauthenticated', message: expect.stringMatching(/signature/) });
    expect((await post('pull_request', body)).statusCode).toBe(401);
    expect(outcomes).toEqual([]);
  });

  it('acknowledges and ignores other events; the route does not exist without a secret', async () => {
    await start();
    const body = JSON.stringify({ zen: 'Keep it logically awesome.' });
    const ping = await post('ping', body, await webhooks.sign(body));
    expect(ping.statusCode).toBe(202);
    expect(ping.json()).toEqual({ accepted: false, kinds: [] });
    expect(outcomes).toEqual([]);
    await h.close();
    h = await harness();
    const none = await h.app.inject({ method: 'POST', url: '/v1/webhooks/github', headers: { 'content-type': 'application/json' }, payload: body });
    expect(none.statusCode).toBe(404);
  });
});
