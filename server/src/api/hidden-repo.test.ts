import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { harness, makeGitRepo, type Harness } from './test-support';

/*
 * The 404 rule (api/README.md, "Who sees a repository"): a repository one may not submit to is
 * one one may not see, and every route answers for it exactly as for a name never registered,
 * naming no owner, submitter or source. One the caller sees but lacks a right on stays a 403.
 */

let h: Harness;
let scratch: string;
let sha: string;
beforeEach(async () => {
  h = await harness();
  scratch = mkdtempSync(join(tmpdir(), 'dockhand-hidden-'));
  sha = makeGitRepo(join(scratch, 'private'));
  const registered = await h.app.inject({ method: 'POST', url: '/v1/repos', headers: h.auth('admin'), payload: { name: 'private', source: join(scratch, 'private'), owners: ['olive'], submitters: ['bob'] } });
  expect(registered.statusCode).toBe(201);
});
afterEach(async () => {
  await h.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** Every route that takes a repository, as alice (who may not submit to `private`) calls it. */
function routes(repo: string): Array<{ method: 'GET' | 'POST' | 'PUT' | 'DELETE'; url: string; payload?: Record<string, unknown> }> {
  return [
    { method: 'GET', url: `/v1/repos/${repo}` },
    { method: 'POST', url: `/v1/repos/${repo}/check`, payload: {} },
    { method: 'GET', url: `/v1/repos/${repo}/check` },
    { method: 'GET', url: `/v1/repos/${repo}/secrets` },
    { method: 'PUT', url: `/v1/repos/${repo}/secrets/NPM_TOKEN`, payload: { value: 'a-value-long-enough' } },
    { method: 'DELETE', url: `/v1/repos/${repo}/secrets/NPM_TOKEN` },
    { method: 'GET', url: `/v1/repos/${repo}/pulls/1` },
    { method: 'POST', url: `/v1/repos/${repo}/pulls/1/comments`, payload: { body: 'hi' } },
    { method: 'POST', url: `/v1/repos/${repo}/pulls/1/reviews`, payload: { verdict: 'approve' } },
    { method: 'GET', url: `/v1/repos/${repo}/pulls/1/checks` },
    { method: 'POST', url: `/v1/repos/${repo}/pulls/1/checks`, payload: { name: 'ci', conclusion: 'failure' } },
    { method: 'GET', url: `/v1/tickets?repo=${repo}` },
    { method: 'GET', url: `/v1/flaky?repo=${repo}` },
    { method: 'DELETE', url: `/v1/flaky?repo=${repo}` },
    { method: 'POST', url: '/v1/tasks', payload: { ticket: { kind: 'text', title: 'Fix it' }, context: { repo, baseSha: sha } } },
  ];
}

describe('a repository the caller may not see', () => {
  it('is 404 on every route, as an unregistered one, naming no owner or source', async () => {
    const hidden = routes('private');
    const absent = routes('nosuch');
    for (const [index, route] of hidden.entries()) {
      const answer = await h.app.inject({ ...route, headers: h.auth('alice') });
      const never = await h.app.inject({ ...absent[index]!, headers: h.auth('alice') });
      expect(answer.statusCode, `${route.method} ${route.url}: ${answer.body}`).toBe(never.statusCode);
      // A route for admins alone (DELETE /v1/flaky) refuses by the token's scope, and one this
      // server cannot serve (tickets without a forge) says so, before any repository is looked up.
      if (answer.statusCode === 403) expect(answer.json().error.field).toBe('scope');
      else if (answer.statusCode === 503) expect(answer.json().error.code).toBe('repository_unavailable');
      else expect(answer.statusCode, `${route.method} ${route.url}: ${answer.body}`).toBe(404);
      expect(answer.body.replaceAll('private', 'nosuch'), `${route.method} ${route.url}`).toBe(never.body);
      expect(answer.body).not.toContain('olive');
      expect(answer.body).not.toContain(scratch);
    }
  });

  it('stays a 403 naming the right where the caller sees the repository but lacks it', async () => {
    // bob is a listed submitter of private, not an owner.
    const secrets = await h.app.inject({ method: 'GET', url: '/v1/repos/private/secrets', headers: h.auth('bob') });
    expect(secrets.statusCode).toBe(403);
    expect(secrets.body).toContain('admins and its owners');
    const check = await h.app.inject({ method: 'POST', url: '/v1/repos/private/check', headers: h.auth('bob'), payload: {} });
    expect(check.statusCode).toBe(403);
    const flaky = await h.app.inject({ method: 'DELETE', url: '/v1/flaky?repo=private', headers: h.auth('bob') });
    expect(flaky.statusCode).toBe(403);
  });
});
