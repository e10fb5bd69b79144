import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorBody } from '@dockhand/protocol';
import { hashToken } from '../store/sqlite';
import { ROUTE_SCOPES, scopeOfRoute } from './auth';
import { CreateTokenResponse, TokenListResponse, expiryFrom } from './tokens';
import { harness, type Harness } from './test-support';

let h: Harness;
beforeEach(async () => { h = await harness(); });
afterEach(async () => { await h.close(); });

const errorOf = (body: string) => ErrorBody.parse(JSON.parse(body)).error;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

async function tokenFor(user: string, options: Parameters<Harness['store']['createToken']>[1]): Promise<string> {
  return (await h.store.createToken(user, options)).token;
}

describe('token expiry', () => {
  it('an expired token answers 401 token_expired naming when it expired and how to make a new one, on REST and the WebSocket', async () => {
    const expiresAt = new Date(Date.now() - 60_000).toISOString();
    const token = await tokenFor('alice', { expiresAt });
    const res = await h.app.inject({ url: '/v1/me', headers: bearer(token) });
    expect(res.statusCode).toBe(401);
    const error = errorOf(res.body);
    expect(error.code).toBe('token_expired');
    expect(error.message).toContain(`expired on ${expiresAt}`);
    expect(error.hint).toContain('dockhand token create --user alice');
    const task = await h.createTask('alice');
    const ws = await h.app.injectWS(`/v1/tasks/${task.id}/events`, { headers: bearer(token) }).then(
      () => 'opened',
      (failure: unknown) => String(failure),
    );
    expect(ws).not.toBe('opened');
  });

  it('a token that has not expired yet works', async () => {
    const token = await tokenFor('alice', { expiresAt: new Date(Date.now() + 60_000).toISOString() });
    expect((await h.app.inject({ url: '/v1/me', headers: bearer(token) })).statusCode).toBe(200);
  });

  it('lifetimes: 90d, 12h, never; anything else is refused naming the field', () => {
    const now = Date.parse('2026-01-01T00:00:00.000Z');
    expect(expiryFrom('90d', now)).toBe('2026-04-01T00:00:00.000Z');
    expect(expiryFrom('12h', now)).toBe('2026-01-01T12:00:00.000Z');
    expect(expiryFrom('never', now)).toBeUndefined();
    for (const bad of ['0d', '90', '-1d', '1y', '99999d', '']) {
      expect(() => expiryFrom(bad, now)).toThrowError(expect.objectContaining({ code: 'bad_request', field: 'expiresIn' }));
    }
  });
});

describe('token scopes', () => {
  it('every route of the app needs a scope: a GET read (or as listed), any other method as listed', () => {
    // printRoutes draws a tree of path pieces (4 columns a level): a route is its ancestors' pieces joined.
    const routes: string[] = [];
    const stack: string[] = [];
    for (const line of h.app.printRoutes({ commonPrefix: false }).split('\n')) {
      const start = line.search(/[^│├└─\s]/);
      const match = /^(\S+) \(([A-Z, ]+)\)$/.exec(line.slice(start));
      if (start < 0 || !match?.[1] || !match[2]) continue;
      const depth = Math.floor(start / 4) - 1;
      stack[depth] = (depth > 0 ? stack[depth - 1] : '') + match[1];
      for (const method of match[2].split(', ')) routes.push(`${method} ${stack[depth]}`);
    }
    expect(routes).toContain('POST /v1/tasks/:id/approvals/:approvalId');
    expect(routes).toContain('DELETE /v1/tokens/:id');
    const unlisted = routes.filter((route) => {
      const [method] = route.split(' ');
      return method !== 'GET' && method !== 'HEAD' && !(route in ROUTE_SCOPES) && !route.includes('/webhooks/');
    });
    expect(unlisted).toEqual([]);
    expect(scopeOfRoute('POST', '/v1/something-new')).toBe('admin');
    expect(scopeOfRoute('GET', '/v1/tasks/:id/events')).toBe('read');
  });

  it('a read-only token reads but cannot submit, steer or review: 403 naming the scope', async () => {
    const token = await tokenFor('alice', { scopes: ['read'] });
    const task = await h.createTask('alice');
    expect((await h.app.inject({ url: `/v1/tasks/${task.id}`, headers: bearer(token) })).statusCode).toBe(200);
    for (const [url, payload, scope] of [
      ['/v1/tasks', h.submitBody(), 'submit'],
      [`/v1/tasks/${task.id}/messages`, { text: 'go on' }, 'submit'],
      [`/v1/tasks/${task.id}/interrupt`, undefined, 'submit'],
      [`/v1/tasks/${task.id}/review`, { action: 'approve', comments: [] }, 'review'],
    ] as const) {
      const res = await h.app.inject({ method: 'POST', url, headers: bearer(token), ...(payload ? { payload } : {}) });
      expect(res.statusCode, url).toBe(403);
      expect(errorOf(res.body)).toMatchObject({ code: 'forbidden', field: 'scope', message: expect.stringContaining(`"${scope}" scope`) });
    }
    expect(h.control.interrupted).toEqual([]);
    expect((await h.store.listTasks({ limit: 10 })).tasks).toHaveLength(1);
  });

  it('a submit-only token submits but cannot read or review', async () => {
    const token = await tokenFor('alice', { scopes: ['submit'] });
    expect((await h.app.inject({ method: 'POST', url: '/v1/tasks', headers: bearer(token), payload: h.submitBody() })).statusCode).toBe(202);
    const read = await h.app.inject({ url: '/v1/tasks', headers: bearer(token) });
    expect(read.statusCode).toBe(403);
    expect(errorOf(read.body).message).toContain('"read" scope');
  });

  it("an admin's token without the admin scope acts as a plain user: no repos, no tokens, no other users' tasks", async () => {
    const token = await tokenFor('root', { scopes: ['read', 'submit', 'review'] });
    const bobs = await h.createTask('bob');
    expect((await h.app.inject({ url: `/v1/tasks/${bobs.id}`, headers: bearer(token) })).statusCode).toBe(404);
    expect(JSON.parse((await h.app.inject({ url: '/v1/tasks', headers: bearer(token) })).body).tasks).toEqual([]);
    const register = await h.app.inject({ method: 'POST', url: '/v1/repos', headers: bearer(token), payload: { name: 'other', source: h.repo.path } });
    expect(register.statusCode).toBe(403);
    expect(errorOf(register.body).message).toContain('"admin" scope');
    expect((await h.app.inject({ url: '/v1/tokens', headers: bearer(token) })).statusCode).toBe(403);
    // The full admin token still sees bob's task.
    expect((await h.app.inject({ url: `/v1/tasks/${bobs.id}`, headers: h.auth('admin') })).statusCode).toBe(200);
  });

  it('tokens from before scopes (none stored) hold every scope of their role', async () => {
    expect((await h.app.inject({ url: '/v1/tokens', headers: h.auth('admin') })).statusCode).toBe(200);
    const res = await h.app.inject({ url: '/v1/tokens', headers: h.auth('alice') });
    expect(res.statusCode).toBe(403);
    expect(errorOf(res.body)).toMatchObject({ field: 'scope', message: expect.stringContaining('alice is not one') });
  });
});

describe('token admin API', () => {
  it('creates a token shown once and stored hashed, lists it without the secret, revokes it', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/v1/tokens', headers: h.auth('admin'), payload: { user: 'carol', label: 'ci', scopes: ['read', 'submit'] } });
    expect(res.statusCode, res.body).toBe(201);
    const created = CreateTokenResponse.parse(JSON.parse(res.body));
    expect(created.info).toMatchObject({ user: 'carol', label: 'ci', scopes: ['read', 'submit'], expired: false });
    // 90 days by default.
    const lifetime = Date.parse(created.info.expiresAt ?? '') - Date.now();
    expect(Math.abs(lifetime - 90 * 86_400_000)).toBeLessThan(60_000);
    expect((await h.store.getUser('carol'))?.role).toBe('user');
    expect(JSON.stringify(h.store.db.prepare('SELECT * FROM tokens').all())).not.toContain(created.token);
    expect(h.store.db.prepare('SELECT hash FROM tokens WHERE id = ?').pluck().get(created.info.id)).toBe(hashToken(created.token));
    expect((await h.app.inject({ url: '/v1/me', headers: bearer(created.token) })).statusCode).toBe(200);

    const list = await h.app.inject({ url: '/v1/tokens?user=carol', headers: h.auth('admin') });
    const { tokens } = TokenListResponse.parse(JSON.parse(list.body));
    expect(tokens.map((t) => t.id)).toEqual([created.info.id]);
    expect(list.body).not.toContain(created.token);

    const revoke = await h.app.inject({ method: 'DELETE', url: `/v1/tokens/${created.info.id}`, headers: h.auth('admin') });
    expect(JSON.parse(revoke.body)).toEqual({ id: created.info.id, revoked: true });
    expect((await h.app.inject({ url: '/v1/me', headers: bearer(created.token) })).statusCode).toBe(401);
    expect((await h.app.inject({ method: 'DELETE', url: `/v1/tokens/${created.info.id}`, headers: h.auth('admin') })).statusCode).toBe(404);
  });

  it('refuses scopes beyond the role, a role change, a bad lifetime and unknown fields, naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ user: 'alice', scopes: ['admin'] }, 'scopes'],
      [{ user: 'alice', role: 'admin' }, 'role'],
      [{ user: 'alice', expiresIn: 'forever' }, 'expiresIn'],
      [{ user: 'alice', scopes: ['write'] }, 'scopes[0]'],
      [{ user: 'alice', hash: 'x' }, ''],
    ];
    for (const [payload, field] of cases) {
      const res = await h.app.inject({ method: 'POST', url: '/v1/tokens', headers: h.auth('admin'), payload });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      if (field) expect(errorOf(res.body).field).toBe(field);
    }
    expect(await h.store.listTokens('alice')).toHaveLength(1);
  });

  it('an admin token made over the API for a new admin holds the admin scope; "never" makes one without expiry', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/v1/tokens', headers: h.auth('admin'), payload: { user: 'ops', role: 'admin', expiresIn: 'never' } });
    const created = CreateTokenResponse.parse(JSON.parse(res.body));
    expect(created.info.scopes).toEqual(['read', 'submit', 'review', 'admin']);
    expect(created.info.expiresAt).toBeUndefined();
    expect((await h.app.inject({ url: '/v1/tokens', headers: bearer(created.token) })).statusCode).toBe(200);
  });
});
