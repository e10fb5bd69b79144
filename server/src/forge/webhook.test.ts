import { Webhooks } from '@octokit/webhooks';
import examples from '@octokit/webhooks-examples/api.github.com/index.json' with { type: 'json' };
import { describe, expect, it } from 'vitest';
import { GitHubWebhookReceiver, headLineOfHunk, steersByAssociation, type GitHubFeedback } from './webhook';

/*
 * The receiver against GitHub's own published example deliveries (`@octokit/webhooks-examples`,
 * every example of every event Dockhand handles), signed by GitHub's own library, not by a hand
 * written HMAC; and the signature checks against the vector in GitHub's "Validating webhook
 * deliveries".
 */

const SECRET = 'webhook-secret-for-tests';
const HANDLED = ['pull_request', 'pull_request_review', 'pull_request_review_comment', 'issue_comment', 'check_run', 'check_suite', 'workflow_run', 'status'] as const;

interface Example { action?: string; [key: string]: unknown }
const definitions = examples as unknown as Array<{ name: string; examples: Example[] }>;
const examplesOf = (name: string): Example[] => definitions.find((definition) => definition.name === name)?.examples ?? [];

async function deliver(receiver: GitHubWebhookReceiver, name: string, payload: unknown, secret = SECRET): Promise<GitHubFeedback[]> {
  const rawBody = JSON.stringify(payload, null, 2);
  const signature = await new Webhooks({ secret }).sign(rawBody);
  return receiver.receive({ headers: { 'x-github-event': name, 'x-github-delivery': '72d3162e-cc78-11e3-81ab-4c9367dc0958', 'x-hub-signature-256': signature }, rawBody });
}

describe('GitHub webhooks through @octokit/webhooks', () => {
  const receiver = new GitHubWebhookReceiver(SECRET);

  it('takes every published example of the events it handles, and reads from each what the action means', async () => {
    let taken = 0;
    for (const name of HANDLED) {
      const list = examplesOf(name);
      expect(list.length, `examples of ${name}`).toBeGreaterThan(0);
      for (const payload of list) {
        const feedback = await deliver(receiver, name, payload);
        taken += 1;
        const action = payload.action;
        const expected =
          name === 'pull_request' ? (action === 'closed' ? 'outcome' : undefined)
          : name === 'pull_request_review_comment' ? (action === 'created' ? 'comment' : undefined)
          : name === 'issue_comment' ? (action === 'created' && (payload.issue as { pull_request?: unknown }).pull_request ? 'comment' : undefined)
          : name === 'pull_request_review' ? (action === 'submitted' && ['approved', 'changes_requested', 'commented'].includes(String((payload.review as { state: string }).state).toLowerCase()) ? 'review' : undefined)
          // A status has no action: it is a check once it is no longer pending (the published ones are success).
          : name === 'status' ? (payload.state !== 'pending' ? 'check' : undefined)
          : action === 'completed' ? 'check' : undefined;
        expect(feedback.map((item) => item.kind), `${name}.${action}`).toEqual(expected ? [expected] : []);
      }
    }
    expect(taken).toBeGreaterThanOrEqual(60);
  });

  it('a line comment keeps its file, line, hunk and author association; a PR comment its number', async () => {
    const lineComment = examplesOf('pull_request_review_comment').find((payload) => payload.action === 'created');
    const [comment] = await deliver(receiver, 'pull_request_review_comment', lineComment);
    const source = lineComment?.comment as { id: number; path: string; diff_hunk: string; user: { login: string }; author_association: string; body: string };
    expect(comment).toMatchObject({ kind: 'comment', id: source.id, path: source.path, hunk: source.diff_hunk, body: source.body, author: { login: source.user.login, association: source.author_association } });
    // The oldest published example has no line (its hunk ends on a removed line); the others say 265.
    const withLine = examplesOf('pull_request_review_comment').find((payload) => payload.action === 'created' && (payload.comment as { line?: number }).line);
    const [placed] = await deliver(receiver, 'pull_request_review_comment', withLine);
    expect(placed?.kind === 'comment' && placed.line).toBe((withLine?.comment as { line: number }).line);
    expect(comment?.kind === 'comment' && comment.line).toBe(undefined);
    expect(headLineOfHunk('@@ -10,3 +12,4 @@ function x\n context\n+added\n context')).toBe(14);
    expect(headLineOfHunk('@@ -1 +1 @@\n-# Hello-World')).toBeUndefined();
    // The published issue_comment examples are all on plain issues (ignored above); on a PR's
    // conversation the issue carries `pull_request` (its URLs), as GitHub's schema describes.
    const created = examplesOf('issue_comment').find((payload) => payload.action === 'created') as Example & { issue: { number: number; url: string } };
    const onPull = { ...created, issue: { ...created.issue, pull_request: { url: created.issue.url.replace('/issues/', '/pulls/'), html_url: '', diff_url: '', patch_url: '', merged_at: null } } };
    const [general] = await deliver(receiver, 'issue_comment', onPull);
    expect(general).toMatchObject({ kind: 'comment', number: created.issue.number });
    expect(general && 'path' in general && general.path).toBeFalsy();
  });

  it('a merged and a closed PR read as their outcome; a red check names its PRs, commit and conclusion', async () => {
    const closed = examplesOf('pull_request').filter((payload) => payload.action === 'closed');
    const outcomes = (await Promise.all(closed.map((payload) => deliver(receiver, 'pull_request', payload)))).flat();
    expect(outcomes.map((item) => item.kind === 'outcome' && item.outcome).sort()).toEqual(closed.map((payload) => ((payload.pull_request as { merged: boolean }).merged ? 'merged' : 'closed')).sort());
    const run = examplesOf('check_run').find((payload) => payload.action === 'completed');
    const [check] = await deliver(receiver, 'check_run', run);
    const source = run?.check_run as { head_sha: string; name: string; conclusion: string; pull_requests: Array<{ number: number }> };
    expect(check).toMatchObject({ kind: 'check', source: 'check_run', headSha: source.head_sha, name: source.name, conclusion: source.conclusion, numbers: source.pull_requests.map((pull) => pull.number) });
  });

  it('refuses a wrong secret, a changed body, a missing signature; a signed body that is not the event is a bad request', async () => {
    const payload = examplesOf('pull_request').find((item) => item.action === 'closed');
    await expect(deliver(receiver, 'pull_request', payload, 'another secret')).rejects.toMatchObject({ code: 'unauthenticated' });
    const rawBody = JSON.stringify(payload);
    const signature = await new Webhooks({ secret: SECRET }).sign(rawBody);
    await expect(receiver.receive({ headers: { 'x-github-event': 'pull_request', 'x-hub-signature-256': signature }, rawBody: rawBody.replace('"closed"', '"opened"') })).rejects.toMatchObject({ code: 'unauthenticated' });
    await expect(receiver.receive({ headers: { 'x-github-event': 'pull_request' }, rawBody })).rejects.toMatchObject({ code: 'unauthenticated' });
    const notJson = 'not json';
    await expect(receiver.receive({ headers: { 'x-github-event': 'pull_request', 'x-hub-signature-256': await new Webhooks({ secret: SECRET }).sign(notJson) }, rawBody: notJson })).rejects.toMatchObject({ code: 'bad_request' });
    await expect(deliver(receiver, 'check_run', { action: 'completed' })).rejects.toMatchObject({ code: 'bad_request', message: expect.stringMatching(/not a check_run event/) });
    expect(await deliver(receiver, 'push', { ref: 'refs/heads/main' })).toEqual([]);
    expect(await deliver(receiver, 'ping', { zen: 'Keep it logically awesome.' })).toEqual([]);
  });

  it('verifies the documented vector (GitHub: "Validating webhook deliveries")', async () => {
    const webhooks = new Webhooks({ secret: "It's a Secret to Everybody" });
    expect(await webhooks.sign('Hello, World!')).toBe('sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17');
  });

  it('owners, members and collaborators steer; contributors, strangers and bots do not unless listed', () => {
    expect(steersByAssociation({ login: 'olga', association: 'OWNER', bot: false })).toBe(true);
    expect(steersByAssociation({ login: 'mia', association: 'MEMBER', bot: false })).toBe(true);
    expect(steersByAssociation({ login: 'cole', association: 'COLLABORATOR', bot: false })).toBe(true);
    expect(steersByAssociation({ login: 'drive-by', association: 'CONTRIBUTOR', bot: false })).toBe(false);
    expect(steersByAssociation({ login: 'drive-by', association: 'NONE', bot: false })).toBe(false);
    expect(steersByAssociation({ login: 'drive-by', association: 'NONE', bot: false }, ['drive-by'])).toBe(true);
    expect(steersByAssociation({ login: 'some-app[bot]', association: 'MEMBER', bot: true })).toBe(false);
  });
});
