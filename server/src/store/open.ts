import { join } from 'node:path';
import type { Config } from '../config';
import type { Logger } from '../log';
import { secureDataDir } from './data-dir';
import { EventHub } from './hub';
import { PostgresStore } from './postgres';
import { SqliteStore } from './sqlite';

export interface OpenedStore {
  store: SqliteStore | PostgresStore;
  /** Live events: in-process with SQLite; from every process of the fleet with Postgres. */
  hub: EventHub;
}

/**
 * The store the configuration names: Postgres when `DOCKHAND_DATABASE_URL` is set (a fleet of
 * API replicas and workers share it), else the embedded SQLite file in the data directory.
 * Closing the store closes its hub.
 */
export async function openStore(config: Config, logger?: Logger): Promise<OpenedStore> {
  await secureDataDir(config.dataDir, { database: config.databaseUrl === undefined });
  if (config.databaseUrl === undefined) return { store: new SqliteStore(join(config.dataDir, 'dockhand.db')), hub: new EventHub() };
  const store = await PostgresStore.open({ url: config.databaseUrl, ...(logger ? { logger } : {}) });
  try {
    // A worker serves no client: it need not hear what the other workers write (their tasks' turns).
    return { store, hub: await store.liveEvents({ heldEvents: config.role !== 'worker' }) };
  } catch (error) {
    await store.close();
    throw error;
  }
}
