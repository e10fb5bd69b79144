import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PostgresStore } from './postgres';

/*
 * A real PostgreSQL for tests: DOCKHAND_TEST_DATABASE_URL when set, else the private server that
 * `.ci/needs/postgres.sh` starts on loopback (run here when its URL file is missing or the server
 * does not answer — the script is idempotent). Each store under test gets a schema of its own,
 * dropped afterwards, so test files and tests never see each other's rows or notices.
 */

const SCRIPT = fileURLToPath(new URL('../../../.ci/needs/postgres.sh', import.meta.url));
const URL_FILE = `${process.env.DOCKHAND_TEST_PG_DIR ?? '/var/tmp/dockhand-postgres'}/url`;

let cached: string | undefined;

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function testDatabaseUrl(): Promise<string> {
  if (cached) return cached;
  const fromEnv = process.env.DOCKHAND_TEST_DATABASE_URL;
  if (fromEnv) {
    cached = fromEnv;
    return fromEnv;
  }
  const known = existsSync(URL_FILE) ? readFileSync(URL_FILE, 'utf8').trim() : '';
  if (known && (await answers(known))) {
    cached = known;
    return known;
  }
  execFileSync('bash', [SCRIPT], { stdio: ['ignore', 'ignore', 'inherit'] });
  cached = readFileSync(URL_FILE, 'utf8').trim();
  return cached;
}

export function testSchema(): string {
  return `test_${randomBytes(6).toString('hex')}`;
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  } finally {
    await client.end();
  }
}

/** A Postgres store on a fresh schema; `dispose` drops the schema. */
export async function openTestStore(options: { schema?: string; poolSize?: number } = {}): Promise<{ store: PostgresStore; url: string; schema: string; dispose(): Promise<void> }> {
  const url = await testDatabaseUrl();
  const schema = options.schema ?? testSchema();
  const store = await PostgresStore.open({ url, schema, poolSize: options.poolSize ?? 4 });
  return { store, url, schema, dispose: () => dropSchema(url, schema) };
}
