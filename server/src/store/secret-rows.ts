import type Database from 'better-sqlite3';
import type pg from 'pg';
import { z } from 'zod';
import type { SecretRow, SecretRows } from '../secrets/types';
import { PostgresStore } from './postgres';
import { SqliteStore } from './sqlite';

/*
 * Repository secrets' rows (migration 7 in both stores). The store holds only ciphertext; the
 * secrets layer encrypts and decrypts (secrets/cipher.ts), so a database dump holds no value.
 */

const Row = z.object({
  repo: z.string(),
  name: z.string(),
  ciphertext: z.string(),
  key_id: z.string(),
  set_by: z.string(),
  set_at: z.string(),
  last_used_at: z.string().nullable(),
  last_used_by: z.string().nullable(),
});

function fromRow(value: unknown): SecretRow {
  const row = Row.parse(value);
  return { repo: row.repo, name: row.name, ciphertext: row.ciphertext, keyId: row.key_id, setBy: row.set_by, setAt: row.set_at, lastUsedAt: row.last_used_at, lastUsedBy: row.last_used_by };
}

const KeyCount = z.object({ key_id: z.string(), count: z.coerce.number() });

export class SqliteSecretRows implements SecretRows {
  constructor(private readonly db: Database.Database) {}

  async put(row: Omit<SecretRow, 'lastUsedAt' | 'lastUsedBy'>): Promise<void> {
    this.db
      .prepare(
        `INSERT INTO secrets (repo, name, ciphertext, key_id, set_by, set_at, last_used_at, last_used_by) VALUES (?, ?, ?, ?, ?, ?, NULL, NULL)
         ON CONFLICT (repo, name) DO UPDATE SET ciphertext = excluded.ciphertext, key_id = excluded.key_id, set_by = excluded.set_by, set_at = excluded.set_at, last_used_at = NULL, last_used_by = NULL`,
      )
      .run(row.repo, row.name, row.ciphertext, row.keyId, row.setBy, row.setAt);
  }

  async get(repo: string, name: string): Promise<SecretRow | undefined> {
    const row = this.db.prepare('SELECT * FROM secrets WHERE repo = ? AND name = ?').get(repo, name);
    return row === undefined ? undefined : fromRow(row);
  }

  async list(repo: string): Promise<SecretRow[]> {
    return this.db.prepare('SELECT * FROM secrets WHERE repo = ? ORDER BY name').all(repo).map(fromRow);
  }

  async listAll(): Promise<SecretRow[]> {
    return this.db.prepare('SELECT * FROM secrets ORDER BY repo, name').all().map(fromRow);
  }

  async remove(repo: string, name: string): Promise<boolean> {
    return this.db.prepare('DELETE FROM secrets WHERE repo = ? AND name = ?').run(repo, name).changes > 0;
  }

  async removeRepo(repo: string): Promise<number> {
    return this.db.prepare('DELETE FROM secrets WHERE repo = ?').run(repo).changes;
  }

  async markUsed(repo: string, name: string, at: string, by: string): Promise<void> {
    this.db.prepare('UPDATE secrets SET last_used_at = ?, last_used_by = ? WHERE repo = ? AND name = ?').run(at, by, repo, name);
  }

  async keyIds(): Promise<Array<{ keyId: string; count: number }>> {
    return this.db.prepare('SELECT key_id, COUNT(*) AS count FROM secrets GROUP BY key_id').all().map((value) => {
      const row = KeyCount.parse(value);
      return { keyId: row.key_id, count: row.count };
    });
  }
}

export class PostgresSecretRows implements SecretRows {
  constructor(private readonly pool: pg.Pool) {}

  async put(row: Omit<SecretRow, 'lastUsedAt' | 'lastUsedBy'>): Promise<void> {
    await this.pool.query(
      `INSERT INTO secrets (repo, name, ciphertext, key_id, set_by, set_at, last_used_at, last_used_by) VALUES ($1, $2, $3, $4, $5, $6, NULL, NULL)
       ON CONFLICT (repo, name) DO UPDATE SET ciphertext = excluded.ciphertext, key_id = excluded.key_id, set_by = excluded.set_by, set_at = excluded.set_at, last_used_at = NULL, last_used_by = NULL`,
      [row.repo, row.name, row.ciphertext, row.keyId, row.setBy, row.setAt],
    );
  }

  async get(repo: string, name: string): Promise<SecretRow | undefined> {
    const { rows } = await this.pool.query('SELECT * FROM secrets WHERE repo = $1 AND name = $2', [repo, name]);
    return rows[0] === undefined ? undefined : fromRow(rows[0]);
  }

  async list(repo: string): Promise<SecretRow[]> {
    return (await this.pool.query('SELECT * FROM secrets WHERE repo = $1 ORDER BY name', [repo])).rows.map(fromRow);
  }

  async listAll(): Promise<SecretRow[]> {
    return (await this.pool.query('SELECT * FROM secrets ORDER BY repo, name')).rows.map(fromRow);
  }

  async remove(repo: string, name: string): Promise<boolean> {
    return ((await this.pool.query('DELETE FROM secrets WHERE repo = $1 AND name = $2', [repo, name])).rowCount ?? 0) > 0;
  }

  async removeRepo(repo: string): Promise<number> {
    return (await this.pool.query('DELETE FROM secrets WHERE repo = $1', [repo])).rowCount ?? 0;
  }

  async markUsed(repo: string, name: string, at: string, by: string): Promise<void> {
    await this.pool.query('UPDATE secrets SET last_used_at = $1, last_used_by = $2 WHERE repo = $3 AND name = $4', [at, by, repo, name]);
  }

  async keyIds(): Promise<Array<{ keyId: string; count: number }>> {
    return (await this.pool.query('SELECT key_id, COUNT(*) AS count FROM secrets GROUP BY key_id')).rows.map((value) => {
      const row = KeyCount.parse(value);
      return { keyId: row.key_id, count: row.count };
    });
  }
}

/** The secret rows of whichever store the server opened. */
export function secretRowsOf(store: SqliteStore | PostgresStore): SecretRows {
  return store instanceof SqliteStore ? new SqliteSecretRows(store.db) : new PostgresSecretRows(store.pool);
}
