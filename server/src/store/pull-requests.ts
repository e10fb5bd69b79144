import type Database from 'better-sqlite3';
import { z } from 'zod';
import { DockhandError } from '../errors';
import type { NewPullRequestRecord, PullRequestRecord, PullRequestState, PullRequestStore } from '../forge/types';

/** One pull-request record as stored (JSON text in SQLite and Postgres alike). */
export const PullRequestRecordSchema = z.object({
  repo: z.string(),
  number: z.number().int().min(1),
  title: z.string(),
  body: z.string(),
  branch: z.string(),
  base: z.string(),
  headSha: z.string(),
  draft: z.boolean(),
  state: z.enum(['open', 'merged', 'closed']),
  createdAt: z.string(),
  mergedAt: z.string().optional(),
  closedAt: z.string().optional(),
  mergeSha: z.string().optional(),
});

export function parsePullRequestRecord(json: unknown): PullRequestRecord {
  return PullRequestRecordSchema.parse(typeof json === 'string' ? JSON.parse(json) : json);
}

/** The local forge's pull-request records (the forge's `PullRequestStore` port) in SQLite. */
export class SqlitePullRequestStore implements PullRequestStore {
  constructor(private readonly db: Database.Database) {}

  async insert(record: NewPullRequestRecord): Promise<PullRequestRecord> {
    return this.db.transaction(() => {
      const max = this.db.prepare('SELECT MAX(number) FROM pull_requests WHERE repo = ?').pluck().get(record.repo);
      const stored = PullRequestRecordSchema.parse({ ...record, number: (typeof max === 'number' ? max : 0) + 1 });
      this.db
        .prepare('INSERT INTO pull_requests (repo, number, branch, record) VALUES (?, ?, ?, ?)')
        .run(stored.repo, stored.number, stored.branch, JSON.stringify(stored));
      return stored;
    })();
  }

  async get(repo: string, number: number): Promise<PullRequestRecord | undefined> {
    const json = this.db.prepare('SELECT record FROM pull_requests WHERE repo = ? AND number = ?').pluck().get(repo, number);
    return json === undefined ? undefined : parsePullRequestRecord(json);
  }

  async findByBranch(repo: string, branch: string): Promise<PullRequestRecord | undefined> {
    const json = this.db.prepare('SELECT record FROM pull_requests WHERE repo = ? AND branch = ? ORDER BY number DESC LIMIT 1').pluck().get(repo, branch);
    return json === undefined ? undefined : parsePullRequestRecord(json);
  }

  async update(
    repo: string,
    number: number,
    patch: Partial<Pick<PullRequestRecord, 'title' | 'body' | 'headSha' | 'draft' | 'state' | 'mergedAt' | 'closedAt' | 'mergeSha'>>,
  ): Promise<PullRequestRecord> {
    return this.db.transaction(() => {
      const json = this.db.prepare('SELECT record FROM pull_requests WHERE repo = ? AND number = ?').pluck().get(repo, number);
      if (json === undefined) throw new DockhandError('not_found', `pull request ${repo}#${number} not found`);
      const updated = PullRequestRecordSchema.parse({ ...parsePullRequestRecord(json), ...patch });
      this.db.prepare('UPDATE pull_requests SET record = ? WHERE repo = ? AND number = ?').run(JSON.stringify(updated), repo, number);
      return updated;
    })();
  }

  async list(repo: string, filter: { state?: PullRequestState } = {}): Promise<PullRequestRecord[]> {
    const rows = this.db.prepare('SELECT record FROM pull_requests WHERE repo = ? ORDER BY number').pluck().all(repo);
    return rows.map(parsePullRequestRecord).filter((record) => filter.state === undefined || record.state === filter.state);
  }
}
