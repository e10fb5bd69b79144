import type { Config } from '../config';
import { secretRowsOf } from '../store/secret-rows';
import type { PostgresStore } from '../store/postgres';
import type { SqliteStore } from '../store/sqlite';
import { RepositorySecrets } from './service';

/** The repositories' secrets of the opened store with the configured key (checked now: a wrong key stops start-up). */
export function openSecrets(config: Pick<Config, 'dataDir' | 'secretsKey'>, store: SqliteStore | PostgresStore): Promise<RepositorySecrets> {
  return RepositorySecrets.open(secretRowsOf(store), { dataDir: config.dataDir, ...(config.secretsKey !== undefined ? { variable: config.secretsKey } : {}) });
}
