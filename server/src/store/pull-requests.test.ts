import Database from 'better-sqlite3';
import { expect, it } from 'vitest';
import { MIGRATIONS, migrate } from './migrations';
import { SqlitePullRequestStore } from './pull-requests';

it('pull requests stored before the branch column are found by branch after the migration', async () => {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
  for (const migration of MIGRATIONS.filter((m) => m.id < 6)) {
    db.exec(migration.sql);
    db.prepare('INSERT INTO migrations (id, name, applied_at) VALUES (?, ?, ?)').run(migration.id, migration.name, '2026-01-01T00:00:00.000Z');
  }
  const record = (number: number, branch: string) => ({
    repo: 'r', number, title: 'Fix', body: 'b', branch, base: 'main', headSha: 'c'.repeat(40), draft: false, state: 'open' as const, createdAt: '2026-01-01T00:00:00.000Z',
  });
  for (const [number, branch] of [[1, 'dockhand/1-a'], [2, 'dockhand/2-b'], [3, 'dockhand/1-a']] as const) {
    db.prepare('INSERT INTO pull_requests (repo, number, record) VALUES (?, ?, ?)').run('r', number, JSON.stringify(record(number, branch)));
  }
  expect(migrate(db)).toEqual(MIGRATIONS.filter((m) => m.id >= 6).map((m) => m.id));
  const store = new SqlitePullRequestStore(db);
  expect(await store.findByBranch('r', 'dockhand/1-a')).toEqual(record(3, 'dockhand/1-a'));
  expect(await store.findByBranch('r', 'dockhand/2-b')).toEqual(record(2, 'dockhand/2-b'));
  const { number: _, ...fresh } = record(0, 'dockhand/4-c');
  expect((await store.insert(fresh)).number).toBe(4);
  expect(await store.findByBranch('r', 'dockhand/4-c')).toMatchObject({ number: 4 });
});
