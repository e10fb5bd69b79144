import { describeStoreContract } from './contract.test-support';
import { SqliteStore } from './sqlite';

// The embedded store against the shared contract (in memory: the file-specific behaviour, WAL and
// reopening, is in sqlite.int.test.ts). postgres.int.test.ts runs the same contract on Postgres.
describeStoreContract('SQLite', async () => ({ store: new SqliteStore(':memory:'), dispose: async () => undefined }));
