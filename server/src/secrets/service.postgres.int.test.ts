import { PostgresSecretRows } from '../store/secret-rows';
import { openTestStore } from '../store/postgres.test-support';
import { describeSecretStore } from './service.test-support';

describeSecretStore('Postgres', async () => {
  const { store, dispose } = await openTestStore();
  return {
    rows: new PostgresSecretRows(store.pool),
    raw: async () => JSON.stringify((await store.pool.query('SELECT * FROM secrets')).rows),
    dispose: async () => {
      await store.close();
      await dispose();
    },
  };
});
