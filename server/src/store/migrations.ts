import type Database from 'better-sqlite3';

/**
 * Ordered schema migrations. Never edit a shipped one: append a new entry. Each runs in a
 * transaction together with its row in `migrations`.
 */
export const MIGRATIONS: ReadonlyArray<{ id: number; name: string; sql: string }> = [
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
        num INTEGER PRIMARY KEY AUTOINCREMENT,
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
        UNIQUE (task_id, seq)
      );
      CREATE TABLE approvals (
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
      CREATE TABLE leases (
        task_id TEXT PRIMARY KEY,
        worker_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      );
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
    name: 'approvals inbox index',
    // The inbox asks for pending approvals newest first; rowid rides along in every index.
    sql: `CREATE INDEX approvals_state ON approvals(state);`,
  },
  {
    id: 3,
    name: 'registered repositories',
    // owners and submitters are JSON arrays of user names; empty submitters = every user.
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
    id: 4,
    name: 'test baselines',
    // The full suite at a base SHA per repository and environment recipe (feedback/baseline.ts).
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
    id: 5,
    name: 'token expiry and scopes',
    // NULL in both for the tokens already there: they keep working as before (no expiry, every
    // scope of their user's role).
    sql: `
      ALTER TABLE tokens ADD COLUMN expires_at TEXT;
      ALTER TABLE tokens ADD COLUMN scopes TEXT;
    `,
  },
  {
    id: 6,
    name: 'pull requests by branch',
    // The forge asks for a branch's PR on every delivery; it read every PR of the repository.
    sql: `
      ALTER TABLE pull_requests ADD COLUMN branch TEXT;
      UPDATE pull_requests SET branch = json_extract(record, '$.branch');
      CREATE INDEX pull_requests_branch ON pull_requests(repo, branch, number);
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
    // The local forge's comments and reviews per PR, and checks per commit (forge/comments.ts):
    // JSON records, numbered in the order they came.
    sql: `
      CREATE TABLE pr_comments (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        repo TEXT NOT NULL,
        number INTEGER NOT NULL,
        record TEXT NOT NULL
      );
      CREATE INDEX pr_comments_pr ON pr_comments(repo, number, id);
      CREATE TABLE pr_checks (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
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
    // Issue #33: each event's hash chains to the previous one (provenance/chain-hash.ts). Events
    // written before this migration keep a NULL hash; a task's chain starts at its first event
    // after it (chain_from), and the task row keeps the head, so the next append (and a verifier
    // that finds the log's tail missing) needs no scan.
    sql: `
      ALTER TABLE events ADD COLUMN hash TEXT;
      ALTER TABLE tasks ADD COLUMN chain_from INTEGER;
      ALTER TABLE tasks ADD COLUMN chain_head TEXT;
    `,
  },
];

export function migrate(db: Database.Database): number[] {
  db.exec(`CREATE TABLE IF NOT EXISTS migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
  const done = new Set(db.prepare('SELECT id FROM migrations').pluck().all().map(Number));
  const applied: number[] = [];
  for (const migration of MIGRATIONS) {
    if (done.has(migration.id)) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      db.prepare('INSERT INTO migrations (id, name, applied_at) VALUES (?, ?, ?)').run(migration.id, migration.name, new Date().toISOString());
    })();
    applied.push(migration.id);
  }
  return applied;
}
