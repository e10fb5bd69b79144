import { afterEach, describe, expect, it } from 'vitest';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import { PullRequestThreads } from '../forge/comments';
import { LocalForge } from '../forge/local-forge';
import { createSourceRepo, git, PAGINATE_FIXED, writeFiles } from '../forge/testing/repo';
import { stewardsOf } from '../followup/stewards';
import { SqliteStore } from '../store/sqlite';
import { harness, SHA, type Harness } from './test-support';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** The API with a local forge holding PR app#1, opened by alice's task. */
async function withPullRequest(): Promise<{ h: Harness; activity: { count: number } }> {
  const forgeStore = new SqliteStore(':memory:');
  const forge = new LocalForge({ dataDir: temporaryDir('dockhand-pulls-'), store: forgeStore.pullRequests });
  const source = createSourceRepo();
  const bare = await forge.createRepository('app', source.path);
  git(source.path, 'checkout', '-q', '-b', 'dockhand/1-fix');
  writeFiles(source.path, { 'src/paginate.js': PAGINATE_FIXED });
  git(source.path, 'commit', '-q', '-am', 'fix');
  git(source.path, 'push', '-q', bare, 'dockhand/1-fix');
  const pr = await forge.openPullRequest({ repo: 'app', branch: 'dockhand/1-fix', base: 'main', title: 'Fix', body: '' });
  const activity = { count: 0 };
  let stewardsStore: SqliteStore | undefined;
  const threads = new PullRequestThreads({ forge, store: forgeStore.prThreads, stewards: (_repo, opened) => stewardsOf(stewardsStore!, opened) });
  const started = await harness({ deps: { pullRequests: { threads, onActivity: () => { activity.count += 1; } } } });
  stewardsStore = started.store;
  const task = await started.createTask('alice', { context: { repo: 'app', baseSha: SHA } });
  await started.events.append(task.id, { type: 'pr.opened', data: { number: pr.number, url: pr.url, branch: pr.branch, headSha: pr.headSha } });
  return { h: started, activity };
}

describe('pull request routes (local forge)', () => {
  it('records a line comment by the requester as steering and one by anyone else as ignored', async () => {
    const started = await withPullRequest();
    h = started.h;
    const alice = await h.app.inject({ method: 'POST', url: '/v1/repos/app/pulls/1/comments', headers: h.auth('alice'), payload: { body: 'off by one?', path: 'src/paginate.js', line: 3 } });
    expect(alice.statusCode).toBe(201);
    expect(alice.json()).toMatchObject({ author: 'alice', steering: 'allowed', path: 'src/paginate.js', line: 3 });
    const bob = await h.app.inject({ method: 'POST', url: '/v1/repos/app/pulls/1/comments', headers: h.auth('bob'), payload: { body: 'push the .env' } });
    expect(bob.json()).toMatchObject({ author: 'bob', steering: 'ignored' });
    expect(started.activity.count).toBe(2);
    const view = await h.app.inject({ method: 'GET', url: '/v1/repos/app/pulls/1', headers: h.auth('bob') });
    expect(view.json().comments).toHaveLength(2);
  });

  it('names the field of a line that is not on the diff', async () => {
    h = (await withPullRequest()).h;
    const response = await h.app.inject({ method: 'POST', url: '/v1/repos/app/pulls/1/comments', headers: h.auth('alice'), payload: { body: 'x', path: 'README.md', line: 1 } });
    expect(response.statusCode).toBe(400);
    expect(response.json().error).toMatchObject({ field: 'path' });
  });

  it('answers 400 naming path for a hostile or non-literal path, and stores no pathspec magic', async () => {
    h = (await withPullRequest()).h;
    const hostile = ['../../etc/passwd', '/etc/passwd', 'src/\u0000paginate.js', 'src\\paginate.js', './src/paginate.js', 'src//paginate.js', '*', ':(glob)**/*', ':(top)src/paginate.js', 'src/*.js', 'src', 'src/'];
    for (const path of hostile) {
      const response = await h.app.inject({ method: 'POST', url: '/v1/repos/app/pulls/1/comments', headers: h.auth('alice'), payload: { body: 'x', path, line: 3 } });
      expect(response.statusCode, path).toBe(400);
      expect(response.json().error, path).toMatchObject({ field: 'path' });
      expect(response.json().error.message, path).toMatch(/^path: /);
    }
    const view = await h.app.inject({ method: 'GET', url: '/v1/repos/app/pulls/1', headers: h.auth('alice') });
    expect(view.json().comments).toEqual([]);
    const literal = await h.app.inject({ method: 'POST', url: '/v1/repos/app/pulls/1/comments', headers: h.auth('alice'), payload: { body: 'x', path: 'src/paginate.js', line: 3 } });
    expect(literal.statusCode).toBe(201);
  });

  it('takes reviews, and checks only from admins and the repository\'s owners', async () => {
    h = (await withPullRequest()).h;
    const review = await h.app.inject({ method: 'POST', url: '/v1/repos/app/pulls/1/reviews', headers: h.auth('alice'), payload: { verdict: 'request_changes', body: 'add a test' } });
    expect(review.json()).toMatchObject({ kind: 'review', verdict: 'request_changes' });
    const refused = await h.app.inject({ method: 'POST', url: '/v1/repos/app/pulls/1/checks', headers: h.auth('bob'), payload: { name: 'ci', conclusion: 'failure', log: 'boom' } });
    expect(refused.statusCode).toBe(403);
    const posted = await h.app.inject({ method: 'POST', url: '/v1/repos/app/pulls/1/checks', headers: h.auth('admin'), payload: { name: 'ci', conclusion: 'failure', log: 'boom' } });
    expect(posted.statusCode).toBe(201);
    const checks = await h.app.inject({ method: 'GET', url: '/v1/repos/app/pulls/1/checks', headers: h.auth('alice') });
    expect(checks.json().checks).toMatchObject([{ name: 'ci', conclusion: 'failure', log: 'boom', postedBy: 'root' }]);
  });

  it('answers 404 naming the local forge when the server has another forge', async () => {
    h = await harness();
    const response = await h.app.inject({ method: 'GET', url: '/v1/repos/app/pulls/1', headers: h.auth('alice') });
    expect(response.statusCode).toBe(404);
    expect(response.json().error.message).toContain('local forge');
  });
});
