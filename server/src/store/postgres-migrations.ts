import type { PoolClient } from 'pg';

/**
 * The Postgres schema, as its own ordered list (numbered apart from SQLite's `migrations.ts`: the
 * two stores evolve together but their SQL differs). Never edit a shipped entry: append one. The
 * pending ones run in one transaction with their rows in `migrations`, under an advisory lock, so
 * replicas and workers that start at the same moment migrate once.
 *
 * Columns mirror the SQLite schema so that `rows.ts` parses rows of either store: times are ISO
 * text, JSON documents are text. Lease times are milliseconds since the epoch (bigint) from the
 * database's clock, so the nodes of a fleet agree on when a lease expires whatever their clocks say.
 */
export const POSTGRES_MIGRATIONS: ReadonlyArray<{ id: number; name: string; sql: string }> = [
  {
    id: 1,
    name: 'initial',
    sql: `
      CREATE TABLE users (
        name TEXT PRIMARY KEY,
        role TEXT NOT NULL CHECK (role IN ('user', 'admin')),
        created_at TEXT NOT NULL
      );
      CREATE TABLE tokens (
        id TEXT PRIMARY KEY,
        user_name TEXT NOT NULL REFERENCES users(name),
        hash TEXT NOT NULL UNIQUE,
        label TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        revoked_at TEXT
      );
      CREATE TABLE tasks (
        num INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,
        state TEXT NOT NULL,
        repo TEXT NOT NULL,
        priority TEXT NOT NULL,
        request TEXT NOT NULL,
        usage TEXT NOT NULL,
        last_seq INTEGER NOT NULL DEFAULT 0,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        pr_url TEXT,
        error TEXT,
        diff TEXT,
        summary TEXT
      );
      CREATE INDEX tasks_owner ON tasks(owner, num);
      CREATE INDEX tasks_state ON tasks(state, num);
      CREATE TABLE events (
        task_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        type TEXT NOT NULL,
        data TEXT NOT NULL,
        ts TEXT NOT NULL,
        PRIMARY KEY (task_id, seq)
      );
      CREATE INDEX events_type ON events(type);
      CREATE TABLE approvals (
        position INTEGER GENERATED ALWAYS AS IDENTITY UNIQUE,
        id TEXT PRIMARY KEY,
        task_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        state TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied')),
        reason TEXT NOT NULL,
        command TEXT,
        tool_use_id TEXT,
        decided_by TEXT,
        comment TEXT,
        created_at TEXT NOT NULL,
        resolved_at TEXT
      );
      CREATE INDEX approvals_task ON approvals(task_id, state);
      CREATE INDEX approvals_pending ON approvals(position) WHERE state = 'pending';
      -- The queue: a task is claimable when its state is runnable and it has no live lease.
      -- epoch is the fencing token: it changes every time the lease changes hands, and every write
      -- a worker makes for a task checks that its epoch is still the lease's.
      CREATE SEQUENCE lease_epochs;
      CREATE TABLE leases (
        task_id TEXT PRIMARY KEY,
        worker_id TEXT NOT NULL,
        expires_at BIGINT NOT NULL,
        epoch BIGINT NOT NULL
      );
      CREATE INDEX tasks_runnable ON tasks((CASE priority WHEN 'normal' THEN 0 ELSE 1 END), num)
        WHERE state IN ('queued', 'provisioning', 'running', 'awaiting_approval', 'verifying', 'pushing');
      CREATE TABLE pull_requests (
        repo TEXT NOT NULL,
        number INTEGER NOT NULL,
        record TEXT NOT NULL,
        PRIMARY KEY (repo, number)
      );
      CREATE TABLE flaky_tests (
        repo TEXT NOT NULL,
        test_id TEXT NOT NULL,
        since TEXT NOT NULL,
        history TEXT NOT NULL,
        PRIMARY KEY (repo, test_id)
      );
    `,
  },
  {
    id: 2,
    name: 'registered repositories',
    // As SQLite's migration 3: owners and submitters are JSON arrays of user names.
    sql: `
      CREATE TABLE repos (
        name TEXT PRIMARY KEY,
        source TEXT NOT NULL,
        mirror_source TEXT,
        default_branch TEXT NOT NULL,
        owners TEXT NOT NULL DEFAULT '[]',
        submitters TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL,
        created_by TEXT NOT NULL
      );
    `,
  },
  {
    id: 3,
    name: 'test baselines',
    // As SQLite's migration 4: the full suite at a base SHA per repository and environment recipe.
    sql: `
      CREATE TABLE baselines (
        repo TEXT NOT NULL,
        recipe TEXT NOT NULL,
        base_sha TEXT NOT NULL,
        result TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (repo, recipe, base_sha)
      );
    `,
  },
  {
    id: 4,
    name: 'model rate budget',
    // The fleet's model calls of the last minute (store/postgres-budget.ts): a reservation per
    // call, corrected to the tokens the provider counted once the call is done.
    sql: `
      CREATE TABLE model_spend (
        id BIGSERIAL PRIMARY KEY,
        at BIGINT NOT NULL,
        tokens INTEGER NOT NULL
      );
      CREATE INDEX model_spend_at ON model_spend (at);
    `,
  },
  {
    id: 5,
    name: 'token expiry and scopes',
    // NULL in both for the tokens already there: no expiry, every scope of their user's role.
    sql: `
      ALTER TABLE tokens ADD COLUMN expires_at TEXT;
      ALTER TABLE tokens ADD COLUMN scopes TEXT;
    `,
  },
  {
    id: 6,
    name: 'pull requests by branch, numbered by a counter',
    // The forge asks for a branch's PR on every delivery (it read every PR of the repository), and
    // a PR's number came from MAX(number) under a per-repo advisory lock held across three round
    // trips: at ~10 PRs a second the inserters queued behind it (55 ms each on average in
    // bench:scale), holding their workers' pool connections. A counter row is taken and the PR
    // inserted in one statement instead.
    sql: `
      ALTER TABLE pull_requests ADD COLUMN branch TEXT;
      UPDATE pull_requests SET branch = record::jsonb->>'branch';
      CREATE INDEX pull_requests_branch ON pull_requests(repo, branch, number);
      CREATE TABLE pull_request_numbers (
        repo TEXT PRIMARY KEY,
        last INTEGER NOT NULL
      );
      INSERT INTO pull_request_numbers (repo, last) SELECT repo, MAX(number) FROM pull_requests GROUP BY repo;
    `,
  },
  {
    id: 7,
    name: 'repository secrets',
    // Values only encrypted (secrets/cipher.ts); key_id names the key that did it (the start-up check).
    sql: `
      CREATE TABLE secrets (
        repo TEXT NOT NULL,
        name TEXT NOT NULL,
        ciphertext TEXT NOT NULL,
        key_id TEXT NOT NULL,
        set_by TEXT NOT NULL,
        set_at TEXT NOT NULL,
        last_used_at TEXT,
        last_used_by TEXT,
        PRIMARY KEY (repo, name)
      );
    `,
  },
  {
    id: 8,
    name: 'pull request comments and checks',
    // As SQLite's migration 8: the local forge's comments per PR and checks per commit.
    sql: `
      CREATE TABLE pr_comments (
        id INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        repo TEXT NOT NULL,
        number INTEGER NOT NULL,
        record TEXT NOT NULL
      );
      CREATE INDEX pr_comments_pr ON pr_comments(repo, number, id);
      CREATE TABLE pr_checks (
        id INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        repo TEXT NOT NULL,
        sha TEXT NOT NULL,
        record TEXT NOT NULL
      );
      CREATE INDEX pr_checks_sha ON pr_checks(repo, sha, id);
    `,
  },
  {
    id: 9,
    name: 'event hash chain',
    // As SQLite's migration 9: each event's chained hash, and the task's chain start and head.
    sql: `
      ALTER TABLE events ADD COLUMN hash TEXT;
      ALTER TABLE tasks ADD COLUMN chain_from INTEGER;
      ALTER TABLE tasks ADD COLUMN chain_head TEXT;
    `,
  },
];

/**
 * Creates the schema when missing and applies what is missing, all in one transaction; returns
 * the ids applied now. `schema` must already be a checked identifier.
 */
export async function migratePostgres(client: PoolClient, schema: string): Promise<number[]> {
  const applied: number[] = [];
  await client.query('BEGIN');
  try {
    // One migrator at a time per schema; the others wait here and then find nothing to do
    // (CREATE … IF NOT EXISTS alone is not safe against a concurrent creator).
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`dockhand-migrate:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query('CREATE TABLE IF NOT EXISTS migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)');
    const done = new Set((await client.query<{ id: number }>('SELECT id FROM migrations')).rows.map((row) => row.id));
    for (const migration of POSTGRES_MIGRATIONS) {
      if (done.has(migration.id)) continue;
      await client.query(migration.sql);
      await client.query('INSERT INTO migrations (id, name, applied_at) VALUES ($1, $2, $3)', [migration.id, migration.name, new Date().toISOString()]);
      applied.push(migration.id);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
  return applied;
}
