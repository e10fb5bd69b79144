import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import { clearQuarantine, InMemoryFlakyStore, listQuarantine, quarantineMarkdown, SqliteFlakyStore } from './flaky';
import type { FlakyStore } from './types';

const evidence = (testId: string) => [
  { testId, diffHash: 'abc', outcome: 'failed' as const, at: '2026-11-29T08:00:00.000Z' },
  { testId, diffHash: 'abc', outcome: 'passed' as const, at: '2026-11-29T08:00:01.000Z' },
];

function storeContract(name: string, make: () => FlakyStore) {
  describe(name, () => {
    it('quarantines per repo, keeps history, lists and clears', async () => {
      const store = make();
      await store.quarantine('acme/shop', 'tests/test_a.py::test_x', evidence('tests/test_a.py::test_x'));
      await store.quarantine('acme/shop', 'tests/test_a.py::test_x', evidence('tests/test_a.py::test_x'));
      await store.quarantine('acme/shop', 'tests/test_b.py::test_y', evidence('tests/test_b.py::test_y'));
      await store.quarantine('acme/other', 'x', evidence('x'));
      const listed = await listQuarantine(store, 'acme/shop');
      expect(listed.map((test) => test.testId)).toEqual(['tests/test_a.py::test_x', 'tests/test_b.py::test_y']);
      expect(listed[0]?.history).toHaveLength(4);
      expect(listed[0]?.since).toBe('2026-11-29T08:00:00.000Z');
      expect(quarantineMarkdown(listed)).toContain('`tests/test_a.py::test_x` — flaky since 2026-11-29T08:00:00.000Z (2 failure(s) in 4 recorded run(s))');
      expect(await clearQuarantine(store, 'acme/shop', ['tests/test_a.py::test_x'])).toBe(1);
      expect((await store.list('acme/shop')).map((test) => test.testId)).toEqual(['tests/test_b.py::test_y']);
      expect(await clearQuarantine(store, 'acme/shop')).toBe(1);
      expect(await store.list('acme/shop')).toEqual([]);
      expect(await store.list('acme/other')).toHaveLength(1);
    });
  });
}

storeContract('InMemoryFlakyStore', () => new InMemoryFlakyStore());
storeContract('SqliteFlakyStore', () => new SqliteFlakyStore(join(temporaryDir('dockhand-flaky-'), 'flaky.db')));

describe('SqliteFlakyStore persistence', () => {
  it('survives reopening the file', async () => {
    const file = join(temporaryDir('dockhand-flaky-'), 'flaky.db');
    const first = new SqliteFlakyStore(file);
    await first.quarantine('acme/shop', 't1', evidence('t1'));
    first.close();
    const second = new SqliteFlakyStore(file);
    expect((await second.list('acme/shop')).map((test) => test.testId)).toEqual(['t1']);
    second.close();
  });
});
