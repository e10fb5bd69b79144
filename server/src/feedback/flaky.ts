import Database from 'better-sqlite3';
import { z } from 'zod';
import type { FlakyObservation, FlakyStore, FlakyTest } from './types';

/** Keeps at most this many observations per test: enough to show the pattern in a PR body. */
const HISTORY_LIMIT = 20;

export class InMemoryFlakyStore implements FlakyStore {
  private readonly tests = new Map<string, Map<string, FlakyTest>>();

  async list(repo: string): Promise<FlakyTest[]> {
    return [...(this.tests.get(repo)?.values() ?? [])].map((test) => ({ ...test, history: [...test.history] }));
  }

  async quarantine(repo: string, testId: string, evidence: FlakyObservation[]): Promise<void> {
    let byId = this.tests.get(repo);
    if (!byId) {
      byId = new Map();
      this.tests.set(repo, byId);
    }
    const existing = byId.get(testId);
    const since = existing?.since ?? evidence[0]?.at ?? new Date().toISOString();
    const history = [...(existing?.history ?? []), ...evidence].slice(-HISTORY_LIMIT);
    byId.set(testId, { repo, testId, since, history });
  }

  async clear(repo: string, testIds?: string[]): Promise<number> {
    const byId = this.tests.get(repo);
    if (!byId) return 0;
    if (!testIds) {
      const count = byId.size;
      this.tests.delete(repo);
      return count;
    }
    let count = 0;
    for (const id of testIds) if (byId.delete(id)) count++;
    return count;
  }
}

const History = z.array(
  z.object({ testId: z.string(), diffHash: z.string(), outcome: z.enum(['passed', 'failed']), at: z.string() }),
);
const Row = z.object({ repo: z.string(), test_id: z.string(), since: z.string(), history: z.string() });

/** Quarantine in a SQLite file (one table), for a single server; the fleet store may replace it. */
export class SqliteFlakyStore implements FlakyStore {
  private readonly db: Database.Database;

  constructor(file: string) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.exec(`CREATE TABLE IF NOT EXISTS flaky_tests (
      repo TEXT NOT NULL,
      test_id TEXT NOT NULL,
      since TEXT NOT NULL,
      history TEXT NOT NULL,
      PRIMARY KEY (repo, test_id)
    )`);
  }

  async list(repo: string): Promise<FlakyTest[]> {
    const rows = this.db.prepare('SELECT repo, test_id, since, history FROM flaky_tests WHERE repo = ? ORDER BY test_id').all(repo);
    return rows.map((value) => {
      const row = Row.parse(value);
      return { repo: row.repo, testId: row.test_id, since: row.since, history: History.parse(JSON.parse(row.history)) };
    });
  }

  async quarantine(repo: string, testId: string, evidence: FlakyObservation[]): Promise<void> {
    const write = this.db.transaction(() => {
      const value = this.db.prepare('SELECT repo, test_id, since, history FROM flaky_tests WHERE repo = ? AND test_id = ?').get(repo, testId);
      const row = value === undefined ? undefined : Row.parse(value);
      const history = [...(row ? History.parse(JSON.parse(row.history)) : []), ...evidence].slice(-HISTORY_LIMIT);
      const since = row?.since ?? evidence[0]?.at ?? new Date().toISOString();
      this.db
        .prepare('INSERT INTO flaky_tests (repo, test_id, since, history) VALUES (?, ?, ?, ?) ON CONFLICT (repo, test_id) DO UPDATE SET history = excluded.history')
        .run(repo, testId, since, JSON.stringify(history));
    });
    write();
  }

  async clear(repo: string, testIds?: string[]): Promise<number> {
    if (!testIds) return this.db.prepare('DELETE FROM flaky_tests WHERE repo = ?').run(repo).changes;
    const remove = this.db.prepare('DELETE FROM flaky_tests WHERE repo = ? AND test_id = ?');
    let count = 0;
    for (const id of testIds) count += remove.run(repo, id).changes;
    return count;
  }

  close(): void {
    this.db.close();
  }
}

/** The quarantine of a repo, for owners (the API route) and the PR body. */
export async function listQuarantine(store: FlakyStore, repo: string): Promise<FlakyTest[]> {
  return store.list(repo);
}

/** Lifts the quarantine of some (or all) tests of a repo; they decide green/red again. */
export async function clearQuarantine(store: FlakyStore, repo: string, testIds?: string[]): Promise<number> {
  return store.clear(repo, testIds);
}

/** One markdown section listing quarantined tests, for the PR body; empty when there are none. */
export function quarantineMarkdown(tests: FlakyTest[]): string {
  if (tests.length === 0) return '';
  const lines = tests.map((test) => {
    const fails = test.history.filter((entry) => entry.outcome === 'failed').length;
    return `- \`${test.testId}\` — flaky since ${test.since} (${fails} failure(s) in ${test.history.length} recorded run(s))`;
  });
  return ['### Quarantined flaky tests', 'These tests failed and then passed on the same code; their results did not decide green/red.', ...lines].join('\n');
}
