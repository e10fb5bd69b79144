import { afterEach, describe, expect, it } from 'vitest';
import { signWebhookBody, type PullRequestWebhookOutcome } from '../forge';
import { harness, type Harness } from './test-support';

const SECRET = 'webhook-secret-for-tests-0123456789';

function delivery(merged: boolean): string {
  // Spacing as GitHub sends it matters: the signature is over these exact bytes.
  return JSON.stringify(
    {
      action: 'closed',
      number: 7,
      pull_request: { merged, merged_at: merged ? '2026-11-29T10:00:00Z' : null, closed_at: '2026-11-29T10:00:00Z', head: { ref: 'dockhand/7-fix' } },
      repository: { full_name: 'acme/app' },
    },
    null,
    2,
  );
}

describe('POST /v1/webhooks/github', () => {
  let h: Harness;
  let received: PullRequestWebhookOutcome[];
  afterEach(async () => h.close());

  async function start(): Promise<void> {
    received = [];
    h = await harness({ deps: { webhooks: { githubSecret: SECRET, onPullRequest: async (outcome) => void received.push(outcome) } } });
  }

  it('accepts a delivery signed over its raw bytes and hands the outcome on, without a bearer token', async () => {
    await start();
    const body = delivery(true);
    const response = await h.app.inject({
      method: 'POST',
      url: '/v1/webhooks/github',
      headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request', 'x-hub-signature-256': signWebhookBody(SECRET, body) },
      payload: body,
    });
    expect(response.statusCode).toBe(202);
    expect(response.json()).toEqual({ accepted: true });
    expect(received).toEqual([{ repo: 'acme/app', number: 7, branch: 'dockhand/7-fix', outcome: 'merged', at: '2026-11-29T10:00:00Z' }]);
  });

  it('refuses a bad signature (or a re-serialised body) with 401 and does nothing', async () => {
    await start();
    const body = delivery(false);
    const resigned = await h.app.inject({
      method: 'POST',
      url: '/v1/webhooks/github',
      headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request', 'x-hub-signature-256': signWebhookBody(SECRET, JSON.stringify(JSON.parse(body))) },
      payload: body,
    });
    expect(resigned.statusCode).toBe(401);
    expect(resigned.json().error).toMatchObject({ code: 'unauthenticated', message: expect.stringMatching(/signature/) });
    const unsigned = await h.app.inject({ method: 'POST', url: '/v1/webhooks/github', headers: { 'content-type': 'application/json', 'x-github-event': 'pull_request' }, payload: body });
    expect(unsigned.statusCode).toBe(401);
    expect(received).toEqual([]);
  });

  it('acknowledges and ignores other events; the route does not exist without a secret', async () => {
    await start();
    const body = JSON.stringify({ zen: 'Keep it logically awesome.' });
    const ping = await h.app.inject({
      method: 'POST',
      url: '/v1/webhooks/github',
      headers: { 'content-type': 'application/json', 'x-github-event': 'ping', 'x-hub-signature-256': signWebhookBody(SECRET, body) },
      payload: body,
    });
    expect(ping.statusCode).toBe(202);
    expect(ping.json()).toEqual({ accepted: false });
    expect(received).toEqual([]);
    await h.close();
    h = await harness();
    const none = await h.app.inject({ method: 'POST', url: '/v1/webhooks/github', headers: { 'content-type': 'application/json' }, payload: body });
    expect(none.statusCode).toBe(404);
  });
});
