import { describe, expect, it } from 'vitest';
import type { NewPullRequestRecord, PullRequestStore } from '../types';

/**
 * The behaviour every `PullRequestStore` must have. The in-memory store runs it here; the SQLite
 * store (store/) can run the same suite:
 *
 *   pullRequestStoreContract('SqlitePullRequestStore', () => new SqlitePullRequestStore(openDb(':memory:')));
 */
export function pullRequestStoreContract(name: string, makeStore: () => PullRequestStore | Promise<PullRequestStore>): void {
  const record = (overrides: Partial<NewPullRequestRecord> = {}): NewPullRequestRecord => ({
    repo: 'sample',
    title: 'Fix paginate',
    body: 'body',
    branch: 'dockhand/1-fix',
    base: 'main',
    headSha: 'a'.repeat(40),
    draft: true,
    state: 'open',
    createdAt: '2026-11-29T08:00:00.000Z',
    ...overrides,
  });

  describe(`${name} (PullRequestStore contract)`, () => {
    it('numbers PRs per repository from 1', async () => {
      const store = await makeStore();
      expect((await store.insert(record())).number).toBe(1);
      expect((await store.insert(record({ branch: 'dockhand/2-b' }))).number).toBe(2);
      expect((await store.insert(record({ repo: 'other' }))).number).toBe(1);
    });

    it('gets, finds the latest PR of a branch, lists by state', async () => {
      const store = await makeStore();
      const first = await store.insert(record());
      await store.update('sample', first.number, { state: 'closed', closedAt: '2026-11-29T09:00:00.000Z' });
      const second = await store.insert(record());
      expect(await store.get('sample', first.number)).toMatchObject({ state: 'closed', closedAt: '2026-11-29T09:00:00.000Z' });
      expect(await store.get('sample', 99)).toBeUndefined();
      expect((await store.findByBranch('sample', 'dockhand/1-fix'))?.number).toBe(second.number);
      expect(await store.findByBranch('sample', 'dockhand/none')).toBeUndefined();
      expect((await store.list('sample', { state: 'open' })).map((pr) => pr.number)).toEqual([second.number]);
      expect(await store.list('sample')).toHaveLength(2);
    });

    it('updates fields and keeps the rest', async () => {
      const store = await makeStore();
      const pr = await store.insert(record());
      const merged = await store.update('sample', pr.number, {
        state: 'merged',
        mergedAt: '2026-11-29T10:00:00.000Z',
        mergeSha: 'b'.repeat(40),
      });
      expect(merged).toEqual({ ...pr, state: 'merged', mergedAt: '2026-11-29T10:00:00.000Z', mergeSha: 'b'.repeat(40) });
      expect(await store.get('sample', pr.number)).toEqual(merged);
      await expect(store.update('sample', 99, { title: 'x' })).rejects.toMatchObject({ code: 'not_found' });
    });

    it('returns copies: mutating a result does not change the store', async () => {
      const store = await makeStore();
      const pr = await store.insert(record());
      pr.title = 'changed';
      expect((await store.get('sample', pr.number))?.title).toBe('Fix paginate');
    });
  });
}
