import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorBody, RepoListResponse, RepoRegistration } from '@dockhand/protocol';
import { harness, makeGitRepo, type Harness } from './test-support';

/*
 * Registered repositories through the API (real git, real SQLite): registration by admins,
 * who may submit, and every hostile `context.repo` answered at submission with a 4xx naming the
 * field, nothing stored and no git child left running.
 */

let h: Harness;
let scratch: string;
beforeEach(async () => {
  h = await harness();
  scratch = mkdtempSync(join(tmpdir(), 'dockhand-repos-'));
});
afterEach(async () => {
  await h.close();
  rmSync(scratch, { recursive: true, force: true });
});

const errorOf = (body: string) => ErrorBody.parse(JSON.parse(body)).error;
const register = (who: 'alice' | 'bob' | 'admin', payload: Record<string, unknown>) =>
  h.app.inject({ method: 'POST', url: '/v1/repos', headers: h.auth(who), payload });
const submit = (who: 'alice' | 'bob' | 'admin', context: Record<string, unknown>) =>
  h.app.inject({ method: 'POST', url: '/v1/tasks', headers: h.auth(who), payload: { ticket: { kind: 'text', title: 'Fix it' }, context } });
const taskCount = async () => (await h.store.listTasks({ limit: 200 })).tasks.length;

describe('registering repositories', () => {
  it('an admin registers a path (201), again with the same source (200); the default branch is detected', async () => {
    const path = join(scratch, 'shop');
    makeGitRepo(path, { 'README.md': 'shop\n' }, 'master');
    const created = await register('admin', { name: 'shop', source: path, owners: ['bob'] });
    expect(created.statusCode).toBe(201);
    expect(RepoRegistration.parse(JSON.parse(created.body))).toMatchObject({ name: 'shop', source: path, defaultBranch: 'master', owners: ['bob'], submitters: [], createdBy: 'root' });
    const again = await register('admin', { name: 'shop', source: path });
    expect(again.statusCode).toBe(200);
    expect(JSON.parse(again.body)).toMatchObject({ owners: ['bob'] });
    const other = await register('admin', { name: 'shop', source: h.repo.path });
    expect(other.statusCode).toBe(409);
    expect(errorOf(other.body)).toMatchObject({ code: 'conflict', field: 'name' });
    expect(errorOf(other.body).hint).toContain('dockhand repo remove shop');
  });

  it('only admins register and remove; users see the repositories they may submit to', async () => {
    const denied = await register('alice', { name: 'mine', source: h.repo.path });
    expect(denied.statusCode).toBe(403);
    expect(errorOf(denied.body).message).toMatch(/for admins/);
    const path = join(scratch, 'private');
    makeGitRepo(path);
    expect((await register('admin', { name: 'private', source: path, submitters: ['bob'] })).statusCode).toBe(201);
    const list = (who: 'alice' | 'bob' | 'admin') => h.app.inject({ url: '/v1/repos', headers: h.auth(who) }).then((r) => RepoListResponse.parse(JSON.parse(r.body)).repos.map((repo) => repo.name));
    expect(await list('alice')).toEqual(['app']);
    expect(await list('bob')).toEqual(['app', 'private']);
    expect(await list('admin')).toEqual(['app', 'private']);
    expect((await h.app.inject({ url: '/v1/repos/private', headers: h.auth('alice') })).statusCode).toBe(404);
    expect((await h.app.inject({ method: 'DELETE', url: '/v1/repos/private', headers: h.auth('bob') })).statusCode).toBe(403);
    expect((await h.app.inject({ method: 'DELETE', url: '/v1/repos/private', headers: h.auth('admin') })).statusCode).toBe(200);
    expect((await h.app.inject({ url: '/v1/repos/private', headers: h.auth('admin') })).statusCode).toBe(404);
  });

  it.each([
    ['ext::sh -c x', /transport helper/],
    ['fd::17', /transport helper/],
    ['--upload-pack=x', /starts with "-"/],
    ['-uf', /starts with "-"/],
    ['file:///tmp/x.git', /file:\/\//],
    ['http://127.0.0.1:1/x.git', /plain http/],
    ['https://user:secret@example.com/x.git', /credentials/],
    ['../../etc', /neither an absolute path/],
    ['/srv/../etc', /\.\./],
  ])('refuses the source %s before any git child starts', async (source, why) => {
    const res = await register('admin', { name: 'bad', source });
    expect(res.statusCode).toBe(400);
    expect(errorOf(res.body)).toMatchObject({ code: 'bad_request', field: 'source' });
    expect(errorOf(res.body).message).toMatch(why);
    expect(h.mirror.children.running).toBe(0);
    expect(await h.store.getRepo('bad')).toBeUndefined();
  });

  it('refuses a path that is not a git repository, naming the source', async () => {
    const res = await register('admin', { name: 'passwd', source: '/etc/passwd' });
    expect(res.statusCode).toBe(400);
    expect(errorOf(res.body)).toMatchObject({ field: 'source' });
    expect(errorOf(res.body).message).toMatch(/\/etc\/passwd is not a git repository/);
    expect(await h.store.getRepo('passwd')).toBeUndefined();
  });
});

describe('submitting for a registered repository', { timeout: 60_000 }, () => {
  it.each([
    ['../../etc', 400],
    ['/etc/passwd', 404],
    ['ext::sh -c x', 400],
    ['--upload-pack=x', 400],
    ['-uf', 400],
    ['fd::17', 400],
    ['http://127.0.0.1:1/x.git', 400],
    ['https://127.0.0.1:1/x.git', 404],
    ['not-registered', 404],
  ])('answers context.repo %s with %i at submission: nothing stored, no git child', async (repo, status) => {
    const res = await submit('alice', { repo, baseSha: h.repo.sha });
    expect(res.statusCode).toBe(status);
    const error = errorOf(res.body);
    expect(error.field).toBe('context.repo');
    expect(error.message).toMatch(/^context\.repo: /);
    expect(error.hint).toMatch(/dockhand repo (add|list)/);
    expect(await taskCount()).toBe(0);
    expect(h.mirror.children.running).toBe(0);
  });

  it('says exactly what to run for an unregistered path', async () => {
    const error = errorOf((await submit('alice', { repo: '/home/alice/src/shop', baseSha: h.repo.sha })).body);
    expect(error.hint).toBe('an admin registers it: dockhand repo add shop --from /home/alice/src/shop, then submit with --repo shop');
  });

  it('accepts the name or the registered source, and stores the registered name', async () => {
    for (const repo of ['app', h.repo.path, `${h.repo.path}/`]) {
      const res = await submit('alice', { repo, baseSha: h.repo.sha });
      expect(res.statusCode).toBe(202);
      expect((await h.store.getTask(JSON.parse(res.body).id))?.context.repo).toBe('app');
    }
  });

  it('answers a user the registration does not list 404 exactly as for an unregistered name (no owner named)', async () => {
    const path = join(scratch, 'private');
    const sha = makeGitRepo(path);
    await register('admin', { name: 'private', source: path, owners: ['olive'], submitters: ['bob'] });
    const res = await submit('alice', { repo: 'private', baseSha: sha });
    expect(res.statusCode).toBe(404);
    expect(errorOf(res.body)).toMatchObject({ code: 'not_found', field: 'context.repo', message: 'context.repo: no repository named private is registered' });
    const unregistered = await submit('alice', { repo: 'nosuch', baseSha: sha });
    expect(errorOf(res.body).hint?.replace('private', 'nosuch')).toBe(errorOf(unregistered.body).hint);
    expect(res.body).not.toContain('olive');
    expect(res.body).not.toContain(path);
    expect(await taskCount()).toBe(0);
    expect((await submit('bob', { repo: 'private', baseSha: sha })).statusCode).toBe(202);
  });

  it('checks the base commit at submission: unknown → 404 naming context.baseSha; a new commit of the source is fetched', async () => {
    const missing = await submit('alice', { repo: 'app', baseSha: 'b'.repeat(40) });
    expect(missing.statusCode).toBe(404);
    expect(errorOf(missing.body)).toMatchObject({ code: 'not_found', field: 'context.baseSha' });
    expect(errorOf(missing.body).message).toContain(`commit ${'b'.repeat(40)} is not in app`);
    expect(await taskCount()).toBe(0);
    writeFileSync(join(h.repo.path, 'src/b.ts'), 'four\n');
    const git = (...args: string[]) => execFileSync('git', args, { cwd: h.repo.path, encoding: 'utf8', env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' } }).trim();
    git('add', '-A');
    git('commit', '-q', '-m', 'later');
    expect((await submit('alice', { repo: 'app', baseSha: git('rev-parse', 'HEAD') })).statusCode).toBe(202);
  });
});

describe('tokens in the query string', () => {
  it('are refused on REST routes with 401 naming the Authorization header', async () => {
    for (const url of [`/v1/tasks?token=${h.tokens.alice}`, `/v1/repos?token=${h.tokens.alice}`]) {
      const res = await h.app.inject({ url });
      expect(res.statusCode).toBe(401);
      expect(errorOf(res.body).hint).toContain('Authorization: Bearer');
    }
    const withHeader = await h.app.inject({ method: 'POST', url: `/v1/tasks/x/interrupt?token=${h.tokens.bob}`, headers: h.auth('alice') });
    expect(withHeader.statusCode).toBe(401);
  });

  it('the repos routes are in the OpenAPI document', async () => {
    const doc = JSON.parse((await h.app.inject({ url: '/docs/json' })).body);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/repos', '/v1/repos/{name}', '/v1/repos/{name}/check']));
  });
});
