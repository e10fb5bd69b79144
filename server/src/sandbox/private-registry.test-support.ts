import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/*
 * The authenticating npm registry of the private-registry tests: the Verdaccio that
 * `.ci/needs/verdaccio.sh` starts on loopback (run here when it does not answer — the script is
 * idempotent), holding @acme/private-utils@1.0.0, readable only with the test user's token.
 */

const SCRIPT = fileURLToPath(new URL('../../../.ci/needs/verdaccio.sh', import.meta.url));
const DIR = process.env.DOCKHAND_TEST_VERDACCIO_DIR ?? '/var/tmp/dockhand-verdaccio';

export interface TestRegistry {
  /** `http://127.0.0.1:8951/` */
  url: string;
  /** The test user's bearer token (what a repository's NPM_ACME secret holds). */
  token: string;
}

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(new URL('-/ping', url), { signal: AbortSignal.timeout(2000) })).ok;
  } catch {
    return false;
  }
}

export async function testRegistry(): Promise<TestRegistry> {
  const known = existsSync(`${DIR}/url`) ? readFileSync(`${DIR}/url`, 'utf8').trim() : '';
  if (!known || !(await answers(known)) || !existsSync(`${DIR}/token`)) execFileSync('bash', [SCRIPT], { stdio: ['ignore', 'ignore', 'inherit'] });
  return { url: readFileSync(`${DIR}/url`, 'utf8').trim(), token: readFileSync(`${DIR}/token`, 'utf8').trim() };
}

export const PRIVATE_PACKAGE = '@acme/private-utils';
