import type Database from 'better-sqlite3';
import { DockhandError } from '../errors';
import { PullRequestCheckSchema, type NewPullRequestCheck, type PullRequestCheck } from '../forge/checks';
import { PullRequestCommentSchema, type NewPullRequestComment, type PullRequestComment, type PullRequestThreadStore } from '../forge/comments';

/**
 * The local forge's PR comments and checks (migration 7: `pr_comments`, `pr_checks`), JSON records
 * numbered by the table's id in the order they came. Postgres: `postgres-pr-threads.ts`.
 */
export class SqlitePullRequestThreadStore implements PullRequestThreadStore {
  constructor(private readonly db: Database.Database) {}

  async addComment(comment: NewPullRequestComment): Promise<PullRequestComment> {
    return this.db.transaction(() => {
      const id = Number(this.db.prepare('INSERT INTO pr_comments (repo, number, record) VALUES (?, ?, ?)').run(comment.repo, comment.number, '{}').lastInsertRowid);
      const stored = PullRequestCommentSchema.parse({ ...comment, id });
      this.db.prepare('UPDATE pr_comments SET record = ? WHERE id = ?').run(JSON.stringify(stored), id);
      return stored;
    })();
  }

  async listComments(repo: string, number: number): Promise<PullRequestComment[]> {
    const rows = this.db.prepare('SELECT record FROM pr_comments WHERE repo = ? AND number = ? ORDER BY id').pluck().all(repo, number);
    return rows.map((json) => PullRequestCommentSchema.parse(JSON.parse(String(json))));
  }

  async resolveComment(repo: string, id: number, commitSha: string): Promise<PullRequestComment> {
    return this.db.transaction(() => {
      const json = this.db.prepare('SELECT record FROM pr_comments WHERE repo = ? AND id = ?').pluck().get(repo, id);
      if (json === undefined) throw new DockhandError('not_found', `comment ${id} on ${repo} not found`);
      const updated = PullRequestCommentSchema.parse({ ...JSON.parse(String(json)), resolvedBy: commitSha });
      this.db.prepare('UPDATE pr_comments SET record = ? WHERE id = ?').run(JSON.stringify(updated), id);
      return updated;
    })();
  }

  async addCheck(check: NewPullRequestCheck): Promise<PullRequestCheck> {
    return this.db.transaction(() => {
      const id = Number(this.db.prepare('INSERT INTO pr_checks (repo, sha, record) VALUES (?, ?, ?)').run(check.repo, check.sha, '{}').lastInsertRowid);
      const stored = PullRequestCheckSchema.parse({ ...check, id });
      this.db.prepare('UPDATE pr_checks SET record = ? WHERE id = ?').run(JSON.stringify(stored), id);
      return stored;
    })();
  }

  async listChecks(repo: string, sha: string): Promise<PullRequestCheck[]> {
    const rows = this.db.prepare('SELECT record FROM pr_checks WHERE repo = ? AND sha = ? ORDER BY id').pluck().all(repo, sha);
    return rows.map((json) => PullRequestCheckSchema.parse(JSON.parse(String(json))));
  }
}
