import { createVerify, generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { appInstallationTokens, appJwt, PUSH_PERMISSIONS, staticToken } from './github-auth';
import { GitHubForge, parseGitHubRepo } from './github-forge';
import { openApiProblems } from './testing/github-openapi';

/**
 * GitHubForge against a scripted fetch: the real Octokit builds real requests, no network.
 */

interface Call {
  method: string;
  path: string;
  query: URLSearchParams;
  body: unknown;
  authorization: string | null;
}

const DraftBody = z.object({ draft: z.boolean() });

type Route = (call: Call) => { status?: number; body: unknown };

/** Every request of every test in this file, judged at the end against GitHub's OpenAPI description. */
const sent: Call[] = [];

function fakeFetch(routes: Record<string, Route>): { fetch: typeof fetch; calls: Call[] } {
  const calls: Call[] = [];
  const fetchImpl = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    const headers = new Headers(init?.headers);
    const call: Call = {
      method: (init?.method ?? 'GET').toUpperCase(),
      path: url.pathname,
      query: url.searchParams,
      body: typeof init?.body === 'string' ? JSON.parse(init.body) : undefined,
      authorization: headers.get('authorization'),
    };
    calls.push(call);
    sent.push(call);
    const route = routes[`${call.method} ${call.path}`];
    if (!route) return new Response(JSON.stringify({ message: 'Not Found' }), { status: 404, headers: { 'content-type': 'application/json' } });
    const { status = 200, body } = route(call);
    return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
  };
  return { fetch: fetchImpl, calls };
}

function pull(overrides: Record<string, unknown> = {}) {
  return {
    number: 7,
    html_url: 'https://github.com/acme/app/pull/7',
    title: 'Fix paginate',
    body: 'body',
    head: { ref: 'dockhand/42-fix', sha: 'c'.repeat(40) },
    base: { ref: 'main' },
    draft: true,
    state: 'open',
    created_at: '2026-11-01T09:00:00Z',
    merged_at: null,
    closed_at: null,
    merge_commit_sha: null,
    ...overrides,
  };
}

describe('parseGitHubRepo', () => {
  it('accepts owner/name and remote URLs', () => {
    for (const form of ['acme/app', 'https://github.com/acme/app', 'https://github.com/acme/app.git', 'git@github.com:acme/app.git']) {
      expect(parseGitHubRepo(form), form).toEqual({ owner: 'acme', name: 'app' });
    }
    expect(() => parseGitHubRepo('not a repo')).toThrow(/not a GitHub repository/);
  });
});

describe('GitHubForge', () => {
  it('opens a draft PR, or returns the open one of the branch', async () => {
    let open = false;
    const { fetch, calls } = fakeFetch({
      'GET /repos/acme/app/pulls': () => ({ body: open ? [pull()] : [] }),
      'POST /repos/acme/app/pulls': () => {
        open = true;
        return { status: 201, body: pull() };
      },
    });
    const forge = new GitHubForge({ tokens: staticToken('fine-grained-test-token'), fetch });
    const input = { repo: 'acme/app', branch: 'dockhand/42-fix', base: 'main', title: 'Fix paginate', body: 'body' };
    const pr = await forge.openPullRequest(input);
    expect(pr).toMatchObject({ repo: 'acme/app', number: 7, draft: true, state: 'open', branch: 'dockhand/42-fix', url: 'https://github.com/acme/app/pull/7' });
    const create = calls.find((call) => call.method === 'POST');
    expect(create?.body).toEqual({ head: 'dockhand/42-fix', base: 'main', title: 'Fix paginate', body: 'body', draft: true });
    expect(create?.authorization).toBe('token fine-grained-test-token');
    expect(calls[0]?.query.get('head')).toBe('acme:dockhand/42-fix');

    expect((await forge.openPullRequest(input)).number).toBe(7);
    expect(calls.filter((call) => call.method === 'POST')).toHaveLength(1);
  });

  it('falls back to a ready PR where the plan has no drafts', async () => {
    const { fetch, calls } = fakeFetch({
      'GET /repos/acme/app/pulls': () => ({ body: [] }),
      'POST /repos/acme/app/pulls': (call) =>
        DraftBody.parse(call.body).draft
          ? { status: 422, body: { message: 'Validation Failed', errors: [{ message: 'Draft pull requests are not supported in this repository.' }] } }
          : { status: 201, body: pull({ draft: false }) },
    });
    const forge = new GitHubForge({ tokens: staticToken('t0ken-for-tests'), fetch });
    const pr = await forge.openPullRequest({ repo: 'acme/app', branch: 'dockhand/42-fix', base: 'main', title: 't', body: 'b' });
    expect(pr.draft).toBe(false);
    expect(calls.filter((call) => call.method === 'POST').map((call) => DraftBody.parse(call.body).draft)).toEqual([true, false]);
  });

  it('lists open issues without pull requests', async () => {
    const { fetch } = fakeFetch({
      'GET /repos/acme/app/issues': () => ({
        body: [
          { number: 1, title: 'Bug', body: 'steps', html_url: 'https://github.com/acme/app/issues/1', labels: [{ name: 'bug' }, 'p1'] },
          { number: 2, title: 'A PR', body: null, html_url: 'u', labels: [], pull_request: { url: 'x' } },
        ],
      }),
    });
    const forge = new GitHubForge({ tokens: staticToken('t0ken-for-tests'), fetch });
    expect(await forge.listOpenIssues('https://github.com/acme/app.git')).toEqual([
      { number: 1, title: 'Bug', body: 'steps', url: 'https://github.com/acme/app/issues/1', labels: ['bug', 'p1'] },
    ]);
  });

  it('gives the push target with a token and the default branch', async () => {
    const { fetch } = fakeFetch({ 'GET /repos/acme/app': () => ({ body: { default_branch: 'trunk' } }) });
    const forge = new GitHubForge({ tokens: staticToken('t0ken-for-tests'), fetch });
    expect(await forge.pushTarget('acme/app')).toEqual({
      url: 'https://github.com/acme/app.git',
      token: 't0ken-for-tests',
      username: 'x-access-token',
      defaultBranch: 'trunk',
    });
  });

  it('reports open, closed, merged and reverted outcomes', async () => {
    const merge = 'e'.repeat(40);
    let state = pull();
    let branchCommits: unknown[] = [];
    const { fetch, calls } = fakeFetch({
      'GET /repos/acme/app/pulls/7': () => ({ body: state }),
      'GET /repos/acme/app/pulls/7/commits': () => ({ body: [{ sha: 'c'.repeat(40) }] }),
      'GET /repos/acme/app/commits': () => ({ body: branchCommits }),
    });
    const forge = new GitHubForge({ tokens: staticToken('t0ken-for-tests'), fetch });
    expect(await forge.getOutcome('acme/app', 7)).toBeUndefined();

    state = pull({ state: 'closed', closed_at: '2026-11-02T00:00:00Z' });
    expect(await forge.getOutcome('acme/app', 7)).toEqual({ outcome: 'closed', at: '2026-11-02T00:00:00Z' });

    state = pull({ state: 'closed', closed_at: '2026-11-02T00:00:00Z', merged_at: '2026-11-02T00:00:00Z', merge_commit_sha: merge });
    const now = new Date('2026-11-30T00:00:00Z');
    expect(await forge.getOutcome('acme/app', 7, { now })).toEqual({ outcome: 'merged', at: '2026-11-02T00:00:00Z' });
    const listing = calls.filter((call) => call.path === '/repos/acme/app/commits').at(-1);
    expect(listing?.query.get('sha')).toBe('main');
    expect(listing?.query.get('since')).toBe('2026-11-02T00:00:00Z');
    expect(listing?.query.get('until')).toBe('2026-11-16T00:00:00.000Z');

    branchCommits = [
      { sha: 'r'.repeat(40), commit: { message: `Revert "Fix paginate"\n\nThis reverts commit ${merge}.`, committer: { date: '2026-11-03T00:00:00Z' } } },
    ];
    expect(await forge.getOutcome('acme/app', 7, { now })).toEqual({ outcome: 'reverted', at: '2026-11-03T00:00:00.000Z', revertSha: 'r'.repeat(40) });
  });
});

describe('GitHub App installation tokens', () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();

  it('signs an RS256 JWT GitHub accepts (iss = app id, iat 60 s back, exp within 10 minutes)', () => {
    const now = new Date('2026-11-29T10:00:00Z');
    const jwt = appJwt(12345, pem, now);
    const [header, payload, signature] = jwt.split('.');
    expect(JSON.parse(Buffer.from(header!, 'base64url').toString())).toEqual({ alg: 'RS256', typ: 'JWT' });
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const seconds = now.getTime() / 1000;
    expect(claims).toEqual({ iat: seconds - 60, exp: seconds + 540, iss: '12345' });
    expect(createVerify('RSA-SHA256').update(`${header}.${payload}`).verify(publicKey, Buffer.from(signature!, 'base64url'))).toBe(true);
  });

  it('mints a token scoped to the one repository with push permissions', async () => {
    const { fetch, calls } = fakeFetch({
      'GET /repos/acme/app/installation': () => ({ body: { id: 99 } }),
      'POST /app/installations/99/access_tokens': () => ({ status: 201, body: { token: 'ghs_minted_for_test', expires_at: '2026-11-29T11:00:00Z' } }),
    });
    const tokens = appInstallationTokens({ appId: 12345, privateKey: pem, fetch });
    expect(await tokens.token({ owner: 'acme', name: 'app' })).toBe('ghs_minted_for_test');
    expect(calls.map((call) => `${call.method} ${call.path}`)).toEqual(['GET /repos/acme/app/installation', 'POST /app/installations/99/access_tokens']);
    expect(calls[1]?.body).toEqual({ repositories: ['app'], permissions: PUSH_PERMISSIONS });
    expect(calls[0]?.authorization).toMatch(/^bearer [\w-]+\.[\w-]+\.[\w-]+$/);
  });
});

describe('against GitHub\u2019s own description of its REST API (@octokit/openapi)', () => {
  it('every request the tests above made is an operation GitHub has, with parameters and a body it accepts', { timeout: 60_000 }, () => {
    expect(sent.length).toBeGreaterThan(10);
    expect(sent.flatMap((call) => openApiProblems(call))).toEqual([]);
  });

  it('the judge can fail: an unknown route, a stray query parameter and a body GitHub refuses', () => {
    const call = (method: string, path: string, body?: unknown, query = '') => ({ method, path, query: new URLSearchParams(query), body });
    expect(openApiProblems(call('POST', '/repos/acme/app/pull-requests', {}))).toEqual([expect.stringMatching(/no such operation/)]);
    expect(openApiProblems(call('GET', '/repos/acme/app/pulls', undefined, 'state=open&colour=red'))).toEqual([expect.stringMatching(/query parameter colour/)]);
    expect(openApiProblems(call('POST', '/repos/acme/app/pulls', { title: 'x', head: 'b', base: 'main', draft: 'yes' }))).toEqual([expect.stringMatching(/body\/draft must be boolean/)]);
  });
});
