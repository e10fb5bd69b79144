import { join } from 'node:path';
import { RepoRegistration } from '@dockhand/protocol';
import { SqliteStore } from '../../server/src/store/sqlite';

/*
 * Tests submit tasks for registered repositories only, as users do: an admin registers the
 * repository first (`dockhand repo add <name> --from <path>`, i.e. `POST /v1/repos`).
 */

/** A token of the admin `root` in the data directory's store (before or beside a running server). */
export async function createAdminToken(dataDir: string): Promise<string> {
  const store = new SqliteStore(join(dataDir, 'dockhand.db'));
  try {
    await store.createUser('root', 'admin');
    return (await store.createToken('root', 'tests: repo registration')).token;
  } finally {
    await store.close();
  }
}

/** `POST /v1/repos` on a running server; again with the same source it is a refresh (200). */
export async function registerRepo(url: string, adminToken: string, name: string, source: string): Promise<RepoRegistration> {
  const response = await fetch(`${url}/v1/repos`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, source }),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`registering ${name} from ${source}: ${response.status} ${text}`);
  return RepoRegistration.parse(JSON.parse(text));
}
