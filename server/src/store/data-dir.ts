import { chmod, mkdir, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/** The snapshot builds' logs and failed-build records (`sandbox/snapshots.ts`'s default log dir). */
export const SNAPSHOT_LOG_DIR = 'snapshot-logs';
export const DATABASE_FILE = 'dockhand.db';

const PRIVATE_DIR = 0o700;
const PRIVATE_FILE = 0o600;

async function chmodIfThere(path: string, mode: number): Promise<void> {
  await chmod(path, mode).catch((error: unknown) => {
    if (!(typeof error === 'object' && error !== null && 'code' in error && error.code === 'ENOENT')) throw error;
  });
}

/**
 * The data directory holds the database (tokens' hashes, every task's log), mirrors of private
 * repositories and build logs: only the server's user may read it. Made 0700, and the database
 * and snapshot logs 0600, at every start, so a data directory made by an older version (0755 and
 * 0644 from the default umask) is closed too. The database file is created 0600 before SQLite
 * opens it: SQLite gives its -wal and -shm files the database file's mode.
 */
export async function secureDataDir(dataDir: string, options: { database: boolean }): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: PRIVATE_DIR });
  await chmod(dataDir, PRIVATE_DIR);
  if (options.database) {
    const database = join(dataDir, DATABASE_FILE);
    await (await open(database, 'a', PRIVATE_FILE)).close();
    for (const suffix of ['', '-wal', '-shm']) await chmodIfThere(`${database}${suffix}`, PRIVATE_FILE);
  }
  const logs = join(dataDir, SNAPSHOT_LOG_DIR);
  await chmodIfThere(logs, PRIVATE_DIR);
  const names = await readdir(logs).catch(() => [] as string[]);
  for (const name of names) await chmodIfThere(join(logs, name), PRIVATE_FILE);
}
