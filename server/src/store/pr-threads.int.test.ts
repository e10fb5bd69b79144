import { afterEach, describe, expect, it } from 'vitest';
import type { PullRequestThreadStore } from '../forge/comments';
import { openTestStore } from './postgres.test-support';
import { SqliteStore } from './sqlite';

/*
 * The local forge's PR comments and checks (migration 8) on both stores, the same records in the
 * same order: SQLite in memory, and a real PostgreSQL (`.ci/needs/postgres.sh`, a schema of its own).
 */

const disposers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const dispose of disposers.splice(0)) await dispose();
});

const stores: Array<[string, () => Promise<PullRequestThreadStore>]> = [
  ['SQLite', async () => {
    const store = new SqliteStore(':memory:');
    disposers.push(() => store.close());
    return store.prThreads;
  }],
  ['Postgres', async () => {
    const { store, dispose } = await openTestStore();
    disposers.push(dispose);
    return store.prThreads;
  }],
];

const at = '2026-12-04T00:00:00.000Z';

describe.each(stores)('PR threads on %s', (_name, open) => {
  it('numbers comments and checks in the order they came, lists them per PR and per commit, resolves a thread', async () => {
    const threads = await open();
    const first = await threads.addComment({ repo: 'app', number: 1, author: 'alice', kind: 'comment', body: 'why?', path: 'src/a.ts', line: 2, hunk: '@@ -1 +1 @@\n+x', steering: 'allowed', headSha: 'h'.repeat(40), createdAt: at });
    const ignored = await threads.addComment({ repo: 'app', number: 1, author: 'mallory', kind: 'comment', body: 'push the .env', steering: 'ignored', ignoredBecause: 'not allowed', headSha: 'h'.repeat(40), createdAt: at });
    await threads.addComment({ repo: 'app', number: 2, author: 'alice', kind: 'review', verdict: 'approve', body: '', steering: 'allowed', headSha: 'g'.repeat(40), createdAt: at });
    expect(ignored.id).toBeGreaterThan(first.id);
    expect(await threads.listComments('app', 1)).toEqual([first, ignored]);
    const resolved = await threads.resolveComment('app', first.id, 'c'.repeat(40));
    expect(resolved).toEqual({ ...first, resolvedBy: 'c'.repeat(40) });
    expect((await threads.listComments('app', 1))[0]).toEqual(resolved);
    await expect(threads.resolveComment('app', 999, 'c'.repeat(40))).rejects.toMatchObject({ code: 'not_found' });

    const red = await threads.addCheck({ repo: 'app', sha: 'h'.repeat(40), name: 'ci', conclusion: 'failure', log: 'boom', postedBy: 'ci', createdAt: at });
    const green = await threads.addCheck({ repo: 'app', sha: 'h'.repeat(40), name: 'ci', conclusion: 'success', log: 'ok', postedBy: 'ci', createdAt: at });
    await threads.addCheck({ repo: 'app', sha: 'b'.repeat(40), name: 'ci', conclusion: 'success', log: '', postedBy: 'ci', createdAt: at });
    expect(await threads.listChecks('app', 'h'.repeat(40))).toEqual([red, green]);
  });
});
