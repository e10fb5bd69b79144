import type pg from 'pg';
import { z } from 'zod';
import { DockhandError } from '../errors';
import { PullRequestCheckSchema, type NewPullRequestCheck, type PullRequestCheck } from '../forge/checks';
import { PullRequestCommentSchema, type NewPullRequestComment, type PullRequestComment, type PullRequestThreadStore } from '../forge/comments';

type Transaction = <T>(work: (client: pg.PoolClient) => Promise<T>) => Promise<T>;

const RecordColumn = z.object({ record: z.string() });
const IdColumn = z.object({ id: z.coerce.number() });

/** The local forge's PR comments and checks in Postgres (same records as `SqlitePullRequestThreadStore`). */
export class PostgresPullRequestThreadStore implements PullRequestThreadStore {
  constructor(private readonly pool: pg.Pool, private readonly transaction: Transaction) {}

  async addComment(comment: NewPullRequestComment): Promise<PullRequestComment> {
    const checked = PullRequestCommentSchema.parse({ ...comment, id: 1 });
    // The id is the only field the database decides: taken and written into the record in one statement.
    const { rows } = await this.pool.query(
      `INSERT INTO pr_comments (repo, number, record) VALUES ($1, $2, $3)
       RETURNING id`,
      [checked.repo, checked.number, JSON.stringify(checked)],
    );
    const id = IdColumn.parse(rows[0]).id;
    const stored = { ...checked, id };
    await this.pool.query('UPDATE pr_comments SET record = $1 WHERE id = $2', [JSON.stringify(stored), id]);
    return stored;
  }

  async listComments(repo: string, number: number): Promise<PullRequestComment[]> {
    const { rows } = await this.pool.query('SELECT id, record FROM pr_comments WHERE repo = $1 AND number = $2 ORDER BY id', [repo, number]);
    return rows.map((row: unknown) => PullRequestCommentSchema.parse({ ...JSON.parse(RecordColumn.parse(row).record), id: IdColumn.parse(row).id }));
  }

  async resolveComment(repo: string, id: number, commitSha: string): Promise<PullRequestComment> {
    return this.transaction(async (client) => {
      const { rows } = await client.query('SELECT record FROM pr_comments WHERE repo = $1 AND id = $2 FOR UPDATE', [repo, id]);
      if (rows[0] === undefined) throw new DockhandError('not_found', `comment ${id} on ${repo} not found`);
      const updated = PullRequestCommentSchema.parse({ ...JSON.parse(RecordColumn.parse(rows[0]).record), id, resolvedBy: commitSha });
      await client.query('UPDATE pr_comments SET record = $1 WHERE id = $2', [JSON.stringify(updated), id]);
      return updated;
    });
  }

  async addCheck(check: NewPullRequestCheck): Promise<PullRequestCheck> {
    const checked = PullRequestCheckSchema.parse({ ...check, id: 1 });
    const { rows } = await this.pool.query('INSERT INTO pr_checks (repo, sha, record) VALUES ($1, $2, $3) RETURNING id', [checked.repo, checked.sha, JSON.stringify(checked)]);
    const id = IdColumn.parse(rows[0]).id;
    const stored = { ...checked, id };
    await this.pool.query('UPDATE pr_checks SET record = $1 WHERE id = $2', [JSON.stringify(stored), id]);
    return stored;
  }

  async listChecks(repo: string, sha: string): Promise<PullRequestCheck[]> {
    const { rows } = await this.pool.query('SELECT id, record FROM pr_checks WHERE repo = $1 AND sha = $2 ORDER BY id', [repo, sha]);
    return rows.map((row: unknown) => PullRequestCheckSchema.parse({ ...JSON.parse(RecordColumn.parse(row).record), id: IdColumn.parse(row).id }));
  }
}
