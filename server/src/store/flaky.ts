import type Database from 'better-sqlite3';
import { z } from 'zod';
import type { FlakyObservation, FlakyStore, FlakyTest } from '../feedback/types';

/** One observation in a quarantined test's history (stored as a JSON array). */
export const FlakyObservationSchema = z.object({
  testId: z.string(),
  diffHash: z.string(),
  outcome: z.enum(['passed', 'failed']),
  at: z.string(),
});
const FlakyRow = z.object({ repo: z.string(), test_id: z.string(), since: z.string(), history: z.string() });

/** The feedback engine's quarantine list, kept in the server's SQLite file. */
export class SqliteFlakyStore implements FlakyStore {
  constructor(private readonly db: Database.Database) {}

  async list(repo: string): Promise<FlakyTest[]> {
    return this.db
      .prepare('SELECT * FROM flaky_tests WHERE repo = ? ORDER BY test_id')
      .all(repo)
      .map((row) => {
        const r = FlakyRow.parse(row);
        return { repo: r.repo, testId: r.test_id, since: r.since, history: z.array(FlakyObservationSchema).parse(JSON.parse(r.history)) };
      });
  }

  async quarantine(repo: string, testId: string, evidence: FlakyObservation[]): Promise<void> {
    this.db.transaction(() => {
      const existing = this.db.prepare('SELECT history FROM flaky_tests WHERE repo = ? AND test_id = ?').pluck().get(repo, testId);
      const history = typeof existing === 'string' ? z.array(FlakyObservationSchema).parse(JSON.parse(existing)) : [];
      history.push(...evidence);
      this.db
        .prepare(
          `INSERT INTO flaky_tests (repo, test_id, since, history) VALUES (?, ?, ?, ?)
           ON CONFLICT(repo, test_id) DO UPDATE SET history = excluded.history`,
        )
        .run(repo, testId, new Date().toISOString(), JSON.stringify(history.slice(-100)));
    })();
  }

  async clear(repo: string, testIds?: string[]): Promise<number> {
    if (testIds === undefined) return this.db.prepare('DELETE FROM flaky_tests WHERE repo = ?').run(repo).changes;
    const remove = this.db.prepare('DELETE FROM flaky_tests WHERE repo = ? AND test_id = ?');
    return this.db.transaction(() => testIds.reduce((sum, id) => sum + remove.run(repo, id).changes, 0))();
  }
}
