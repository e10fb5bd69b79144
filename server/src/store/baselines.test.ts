import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { InMemoryBaselineStore } from '../feedback/baseline';
import { TEST_RUNNERS, type BaselineResult, type BaselineStore } from '../feedback/types';
import { SqliteBaselineStore } from './baselines';
import { migrate } from './migrations';

const result: BaselineResult = { command: 'npm test → tape test/*.js', runner: 'tape', passed: 83, failed: 1, flaky: ['retries > ok'], preExistingFailures: ['money > rounds'], seconds: 2.5 };
const key = { repo: 'acme/shop', recipe: 'abc123', baseSha: 'a'.repeat(40) };

describe.each([
  ['in memory', () => new InMemoryBaselineStore()],
  ['SQLite (migration 4)', () => {
    const db = new Database(':memory:');
    migrate(db);
    return new SqliteBaselineStore(db);
  }],
] satisfies Array<[string, () => BaselineStore]>)('baseline store: %s', (_name, make) => {
  it('keeps a baseline per repository, recipe and base SHA', async () => {
    const store = make();
    await store.put(key, result);
    expect(await store.get(key)).toEqual(result);
    expect(await store.get({ ...key, recipe: 'other' })).toBeUndefined();
    expect(await store.get({ ...key, repo: 'acme/other' })).toBeUndefined();
    expect(await store.get({ ...key, baseSha: 'b'.repeat(40) })).toBeUndefined();
    await store.put(key, { ...result, preExistingFailures: [] });
    expect((await store.get(key))?.preExistingFailures).toEqual([]);
  });

  it('keeps a baseline of every runner Dockhand reads', async () => {
    const store = make();
    for (const runner of [...TEST_RUNNERS, 'unknown'] as const) {
      const at = { ...key, recipe: runner };
      await store.put(at, { ...result, runner });
      expect((await store.get(at))?.runner).toBe(runner);
    }
  });
});
