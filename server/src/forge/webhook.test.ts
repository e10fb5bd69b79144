import { describe, expect, it } from 'vitest';
import { handleGitHubWebhook, parsePullRequestWebhook, signWebhookBody, verifyWebhookSignature } from './webhook';

describe('verifyWebhookSignature', () => {
  // The test vector from GitHub's "Validating webhook deliveries" documentation.
  const secret = "It's a Secret to Everybody";
  const body = 'Hello, World!';
  const signature = 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17';

  it('accepts the documented vector', () => {
    expect(signWebhookBody(secret, body)).toBe(signature);
    expect(verifyWebhookSignature(secret, body, signature)).toBe(true);
    expect(verifyWebhookSignature(secret, Buffer.from(body), signature)).toBe(true);
  });

  it('rejects a wrong secret, a changed body, a missing, malformed or sha1 signature', () => {
    expect(verifyWebhookSignature('another secret', body, signature)).toBe(false);
    expect(verifyWebhookSignature(secret, 'Hello, World?', signature)).toBe(false);
    expect(verifyWebhookSignature(secret, body, undefined)).toBe(false);
    expect(verifyWebhookSignature(secret, body, signature.toUpperCase())).toBe(false);
    expect(verifyWebhookSignature(secret, body, signature.slice(0, -2))).toBe(false);
    expect(verifyWebhookSignature(secret, body, 'sha1=0123456789abcdef0123456789abcdef01234567')).toBe(false);
    expect(verifyWebhookSignature('', body, signature)).toBe(false);
  });
});

describe('pull_request webhooks', () => {
  const closed = (merged: boolean) => ({
    action: 'closed',
    number: 17,
    pull_request: {
      merged,
      merged_at: merged ? '2026-11-20T12:00:00Z' : null,
      closed_at: '2026-11-20T12:00:00Z',
      merge_commit_sha: 'f'.repeat(40),
      head: { ref: 'dockhand/42-fix' },
    },
    repository: { full_name: 'acme/app' },
  });

  it('reports merged and closed', () => {
    expect(parsePullRequestWebhook('pull_request', closed(true))).toEqual({
      repo: 'acme/app',
      number: 17,
      branch: 'dockhand/42-fix',
      outcome: 'merged',
      at: '2026-11-20T12:00:00Z',
    });
    expect(parsePullRequestWebhook('pull_request', closed(false))?.outcome).toBe('closed');
  });

  it('ignores other events and actions', () => {
    expect(parsePullRequestWebhook('push', closed(true))).toBeUndefined();
    expect(parsePullRequestWebhook('pull_request', { ...closed(true), action: 'opened' })).toBeUndefined();
    expect(parsePullRequestWebhook('pull_request', { nonsense: true })).toBeUndefined();
  });

  it('verifies before parsing', () => {
    const secret = 'webhook-secret-for-tests';
    const rawBody = JSON.stringify(closed(true));
    const headers = { 'x-github-event': 'pull_request', 'x-hub-signature-256': signWebhookBody(secret, rawBody) };
    expect(handleGitHubWebhook(secret, { headers, rawBody })?.outcome).toBe('merged');
    expect(() => handleGitHubWebhook(secret, { headers, rawBody: rawBody.replace('17', '18') })).toThrow(/signature does not match/);
    expect(() => handleGitHubWebhook(secret, { headers: { 'x-github-event': 'pull_request' }, rawBody })).toThrow(
      expect.objectContaining({ code: 'unauthenticated' }),
    );
    const notJson = 'not json';
    expect(() => handleGitHubWebhook(secret, { headers: { ...headers, 'x-hub-signature-256': signWebhookBody(secret, notJson) }, rawBody: notJson })).toThrow(
      expect.objectContaining({ code: 'bad_request' }),
    );
  });
});
