import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorBody } from '@dockhand/protocol';
import { SecretListResponse } from './secrets';
import { harness, makeGitRepo, type Harness } from './test-support';

/* A repository's secrets over the API: admins and its owners only, values never answered. */

let h: Harness;
let scratch: string;
beforeEach(async () => {
  h = await harness();
  scratch = mkdtempSync(join(tmpdir(), 'dockhand-secrets-api-'));
  const path = join(scratch, 'shop');
  makeGitRepo(path);
  const registered = await h.app.inject({ method: 'POST', url: '/v1/repos', headers: h.auth('admin'), payload: { name: 'shop', source: path, owners: ['bob'] } });
  expect(registered.statusCode).toBe(201);
});
afterEach(async () => {
  await h.close();
  rmSync(scratch, { recursive: true, force: true });
});

const VALUE = 'npm_s3cr3t_T0KEN_value';
const errorOf = (body: string) => ErrorBody.parse(JSON.parse(body)).error;
const put = (headers: Record<string, string>, repo: string, name: string, value: unknown = VALUE) =>
  h.app.inject({ method: 'PUT', url: `/v1/repos/${repo}/secrets/${name}`, headers, payload: { value } });
const list = (headers: Record<string, string>, repo = 'shop') => h.app.inject({ url: `/v1/repos/${repo}/secrets`, headers });

describe('repository secrets over the API', () => {
  it('an owner and an admin set, list and remove; no answer holds the value', async () => {
    const set = await put(h.auth('bob'), 'shop', 'NPM_ACME');
    expect(set.statusCode).toBe(200);
    expect(set.body).not.toContain(VALUE);
    expect(JSON.parse(set.body)).toMatchObject({ name: 'NPM_ACME', setBy: 'bob', lastUsedAt: null });
    expect((await put(h.auth('admin'), 'shop', 'SENTRY_AUTH', 'another-value-123')).statusCode).toBe(200);
    const listed = await list(h.auth('bob'));
    expect(listed.statusCode).toBe(200);
    expect(listed.body).not.toContain(VALUE);
    expect(SecretListResponse.parse(JSON.parse(listed.body)).secrets.map((secret) => [secret.name, secret.setBy])).toEqual([['NPM_ACME', 'bob'], ['SENTRY_AUTH', 'root']]);
    const removed = await h.app.inject({ method: 'DELETE', url: '/v1/repos/shop/secrets/NPM_ACME', headers: h.auth('admin') });
    expect(JSON.parse(removed.body)).toEqual({ name: 'NPM_ACME', removed: true });
    const again = await h.app.inject({ method: 'DELETE', url: '/v1/repos/shop/secrets/NPM_ACME', headers: h.auth('bob') });
    expect(again.statusCode).toBe(404);
    expect(errorOf(again.body).hint).toContain('dockhand secret list shop');
  });

  it('anyone else is refused: a user who is not an owner, a token without the submit scope, no token', async () => {
    const alice = await put(h.auth('alice'), 'shop', 'NPM_ACME');
    expect(alice.statusCode).toBe(403);
    expect(errorOf(alice.body).message).toBe('the secrets of shop are for admins and its owners');
    expect(errorOf(alice.body).hint).toBe('ask bob');
    expect((await list(h.auth('alice'))).statusCode).toBe(403);
    const readOnly = (await h.store.createToken('bob', { scopes: ['read'] })).token;
    expect((await put({ authorization: `Bearer ${readOnly}` }, 'shop', 'NPM_ACME')).statusCode).toBe(403);
    expect((await h.app.inject({ method: 'PUT', url: '/v1/repos/shop/secrets/NPM_ACME', payload: { value: VALUE } })).statusCode).toBe(401);
    expect((await list(h.auth('admin'))).body).toContain('"secrets":[]');
  });

  it('removing a registration removes its secrets: the name registered again starts with none', async () => {
    expect((await put(h.auth('bob'), 'shop', 'NPM_ACME')).statusCode).toBe(200);
    expect((await h.app.inject({ method: 'DELETE', url: '/v1/repos/shop', headers: h.auth('admin') })).statusCode).toBe(200);
    const path = join(scratch, 'shop-again');
    makeGitRepo(path);
    expect((await h.app.inject({ method: 'POST', url: '/v1/repos', headers: h.auth('admin'), payload: { name: 'shop', source: path, owners: ['alice'] } })).statusCode).toBe(201);
    expect(SecretListResponse.parse(JSON.parse((await list(h.auth('alice'))).body)).secrets).toEqual([]);
  });

  it('a bad name, an empty value and an unknown repository name the field or the repository', async () => {
    const badName = await put(h.auth('admin'), 'shop', 'npm-acme');
    expect(badName.statusCode).toBe(400);
    expect(errorOf(badName.body).message).toContain('secret');
    const empty = await put(h.auth('admin'), 'shop', 'NPM_ACME', '');
    expect(empty.statusCode).toBe(400);
    expect(errorOf(empty.body).field).toBe('value');
    const unknown = await put(h.auth('admin'), 'nowhere', 'NPM_ACME');
    expect(unknown.statusCode).toBe(404);
    expect(errorOf(unknown.body).message).toBe('repository nowhere is not registered');
  });
});
