import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../store/sqlite';
import { SqliteSecretRows } from '../store/secret-rows';
import { describeSecretStore } from './service.test-support';

describeSecretStore('SQLite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'secrets-db-'));
  const path = join(dir, 'dockhand.db');
  const store = new SqliteStore(path);
  return {
    rows: new SqliteSecretRows(store.db),
    // The database's bytes as a reader of the file would see them (WAL folded in first).
    raw: async () => {
      store.db.pragma('wal_checkpoint(TRUNCATE)');
      return readFileSync(path).toString('latin1');
    },
    dispose: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
