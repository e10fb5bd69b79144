import type pg from 'pg';
import { z } from 'zod';
import type { RepoRegistration } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import type { BaselineKey, BaselineResult, BaselineStore, FlakyObservation, FlakyStore, FlakyTest } from '../feedback/types';
import type { NewPullRequestRecord, PullRequestRecord, PullRequestState, PullRequestStore } from '../forge/types';
import { StoredBaseline } from './baselines';
import { FlakyObservationSchema } from './flaky';
import { PullRequestRecordSchema, parsePullRequestRecord } from './pull-requests';
import { toRepo } from './rows';

type Transaction = <T>(work: (client: pg.PoolClient) => Promise<T>) => Promise<T>;

const RecordColumn = z.object({ record: z.string() });
const FlakyRow = z.object({ repo: z.string(), test_id: z.string(), since: z.string(), history: z.string() });

/** The local forge's pull-request records in Postgres (same records as `SqlitePullRequestStore`). */
export class PostgresPullRequestStore implements PullRequestStore {
  constructor(private readonly pool: pg.Pool, private readonly transaction: Transaction) {}

  async insert(record: NewPullRequestRecord): Promise<PullRequestRecord> {
    // Checked before the number is taken: the number is the only field the database decides.
    const checked = PullRequestRecordSchema.parse({ ...record, number: 1 });
    // Numbers are per repo, from a counter row: taken and the PR stored in one statement (one
    // round trip; the row is locked only for it). GREATEST keeps ahead of PRs numbered by MAX.
    const { rows } = await this.pool.query({
      name: 'dockhand_pull_request_insert',
      text: `WITH next AS (
               INSERT INTO pull_request_numbers AS counter (repo, last)
               VALUES ($1, COALESCE((SELECT MAX(number) FROM pull_requests WHERE repo = $1), 0) + 1)
               ON CONFLICT (repo) DO UPDATE
                 SET last = GREATEST(counter.last, (SELECT COALESCE(MAX(number), 0) FROM pull_requests WHERE repo = $1)) + 1
               RETURNING last
             )
             INSERT INTO pull_requests (repo, number, branch, record)
             SELECT $1, next.last, $2, jsonb_set($3::jsonb, '{number}', to_jsonb(next.last))::text FROM next
             RETURNING number`,
      values: [checked.repo, checked.branch, JSON.stringify(checked)],
    });
    return { ...checked, number: z.object({ number: z.number() }).parse(rows[0]).number };
  }

  async get(repo: string, number: number): Promise<PullRequestRecord | undefined> {
    const { rows } = await this.pool.query('SELECT record FROM pull_requests WHERE repo = $1 AND number = $2', [repo, number]);
    return rows[0] === undefined ? undefined : parsePullRequestRecord(RecordColumn.parse(rows[0]).record);
  }

  async findByBranch(repo: string, branch: string): Promise<PullRequestRecord | undefined> {
    const { rows } = await this.pool.query('SELECT record FROM pull_requests WHERE repo = $1 AND branch = $2 ORDER BY number DESC LIMIT 1', [repo, branch]);
    return rows[0] === undefined ? undefined : parsePullRequestRecord(RecordColumn.parse(rows[0]).record);
  }

  async update(
    repo: string,
    number: number,
    patch: Partial<Pick<PullRequestRecord, 'title' | 'body' | 'headSha' | 'draft' | 'state' | 'mergedAt' | 'closedAt' | 'mergeSha'>>,
  ): Promise<PullRequestRecord> {
    return this.transaction(async (client) => {
      const { rows } = await client.query('SELECT record FROM pull_requests WHERE repo = $1 AND number = $2 FOR UPDATE', [repo, number]);
      if (rows[0] === undefined) throw new DockhandError('not_found', `pull request ${repo}#${number} not found`);
      const updated = PullRequestRecordSchema.parse({ ...parsePullRequestRecord(RecordColumn.parse(rows[0]).record), ...patch });
      await client.query('UPDATE pull_requests SET record = $1 WHERE repo = $2 AND number = $3', [JSON.stringify(updated), repo, number]);
      return updated;
    });
  }

  async list(repo: string, filter: { state?: PullRequestState } = {}): Promise<PullRequestRecord[]> {
    const { rows } = await this.pool.query('SELECT record FROM pull_requests WHERE repo = $1 ORDER BY number', [repo]);
    return rows
      .map((row: unknown) => parsePullRequestRecord(RecordColumn.parse(row).record))
      .filter((record) => filter.state === undefined || record.state === filter.state);
  }
}

/** The feedback engine's quarantine list in Postgres (same rules as `SqliteFlakyStore`). */
export class PostgresFlakyStore implements FlakyStore {
  constructor(private readonly pool: pg.Pool, private readonly transaction: Transaction) {}

  async list(repo: string): Promise<FlakyTest[]> {
    const { rows } = await this.pool.query('SELECT * FROM flaky_tests WHERE repo = $1 ORDER BY test_id COLLATE "C"', [repo]);
    return rows.map((row: unknown) => {
      const r = FlakyRow.parse(row);
      return { repo: r.repo, testId: r.test_id, since: r.since, history: z.array(FlakyObservationSchema).parse(JSON.parse(r.history)) };
    });
  }

  async quarantine(repo: string, testId: string, evidence: FlakyObservation[]): Promise<void> {
    await this.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`flaky:${repo}:${testId}`]);
      const { rows } = await client.query('SELECT history FROM flaky_tests WHERE repo = $1 AND test_id = $2', [repo, testId]);
      const existing = z.object({ history: z.string() }).optional().parse(rows[0]);
      const history = existing ? z.array(FlakyObservationSchema).parse(JSON.parse(existing.history)) : [];
      history.push(...evidence);
      await client.query(
        `INSERT INTO flaky_tests (repo, test_id, since, history) VALUES ($1, $2, $3, $4)
         ON CONFLICT (repo, test_id) DO UPDATE SET history = excluded.history`,
        [repo, testId, new Date().toISOString(), JSON.stringify(history.slice(-100))],
      );
    });
  }

  async clear(repo: string, testIds?: string[]): Promise<number> {
    const result = testIds === undefined
      ? await this.pool.query('DELETE FROM flaky_tests WHERE repo = $1', [repo])
      : await this.pool.query('DELETE FROM flaky_tests WHERE repo = $1 AND test_id = ANY($2)', [repo, testIds]);
    return result.rowCount ?? 0;
  }
}

/** The feedback engine's baselines in Postgres (same rules as `SqliteBaselineStore`). */
export class PostgresBaselineStore implements BaselineStore {
  constructor(private readonly pool: pg.Pool) {}

  async get(key: BaselineKey): Promise<BaselineResult | undefined> {
    const { rows } = await this.pool.query('SELECT result FROM baselines WHERE repo = $1 AND recipe = $2 AND base_sha = $3', [key.repo, key.recipe, key.baseSha]);
    const value = z.object({ result: z.string() }).optional().parse(rows[0]);
    if (!value) return undefined;
    const parsed = StoredBaseline.safeParse(JSON.parse(value.result));
    // A row written by another version that no longer parses is recomputed, not trusted.
    return parsed.success ? parsed.data : undefined;
  }

  async put(key: BaselineKey, result: BaselineResult): Promise<void> {
    const { infrastructure: _infrastructure, ...stored } = result;
    await this.pool.query(
      `INSERT INTO baselines (repo, recipe, base_sha, result, created_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (repo, recipe, base_sha) DO UPDATE SET result = excluded.result, created_at = excluded.created_at`,
      [key.repo, key.recipe, key.baseSha, JSON.stringify(StoredBaseline.parse(stored)), new Date().toISOString()],
    );
  }
}

/** Registered repositories in Postgres (the `RepoStore` port, as SQLite keeps them). */
export class PostgresRepoStore {
  constructor(private readonly pool: pg.Pool) {}

  async put(registration: RepoRegistration): Promise<RepoRegistration> {
    await this.pool.query(
      `INSERT INTO repos (name, source, mirror_source, default_branch, owners, submitters, created_at, created_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (name) DO UPDATE SET source = excluded.source, mirror_source = excluded.mirror_source,
         default_branch = excluded.default_branch, owners = excluded.owners, submitters = excluded.submitters`,
      [
        registration.name,
        registration.source,
        registration.mirrorSource ?? null,
        registration.defaultBranch,
        JSON.stringify(registration.owners),
        JSON.stringify(registration.submitters),
        registration.createdAt,
        registration.createdBy,
      ],
    );
    const stored = await this.get(registration.name);
    if (!stored) throw new DockhandError('internal', `repository ${registration.name} vanished`);
    return stored;
  }

  async get(name: string): Promise<RepoRegistration | undefined> {
    const { rows } = await this.pool.query('SELECT * FROM repos WHERE name = $1', [name]);
    return rows[0] === undefined ? undefined : toRepo(rows[0]);
  }

  async list(): Promise<RepoRegistration[]> {
    return (await this.pool.query('SELECT * FROM repos ORDER BY name COLLATE "C"')).rows.map(toRepo);
  }

  async delete(name: string): Promise<boolean> {
    return (await this.pool.query('DELETE FROM repos WHERE name = $1', [name])).rowCount === 1;
  }
}
