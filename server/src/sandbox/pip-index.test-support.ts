import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/*
 * The authenticating Python index of the pip-through-the-front tests: the nginx that
 * `.ci/needs/pyindex.sh` starts on loopback (run here when it does not answer 401 — the script is
 * idempotent), holding acme-private-utils 1.0.0, readable only with the test user's password.
 */

const SCRIPT = fileURLToPath(new URL('../../../.ci/needs/pyindex.sh', import.meta.url));
const DIR = process.env.DOCKHAND_TEST_PYINDEX_DIR ?? '/var/tmp/pyindex';

export interface TestPythonIndex {
  /** `http://127.0.0.1:8741/simple/` */
  url: string;
  username: string;
  /** The test user's password (what a repository's PYPI_ACME secret holds). */
  token: string;
}

async function refusesAnonymous(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).status === 401;
  } catch {
    return false;
  }
}

export async function testPythonIndex(): Promise<TestPythonIndex> {
  const known = existsSync(`${DIR}/url`) ? readFileSync(`${DIR}/url`, 'utf8').trim() : '';
  if (!known || !(await refusesAnonymous(known)) || !existsSync(`${DIR}/token`)) execFileSync('bash', [SCRIPT], { stdio: ['ignore', 'ignore', 'inherit'] });
  return { url: readFileSync(`${DIR}/url`, 'utf8').trim(), username: readFileSync(`${DIR}/username`, 'utf8').trim(), token: readFileSync(`${DIR}/token`, 'utf8').trim() };
}

export const PRIVATE_PYTHON_PACKAGE = 'acme-private-utils';

/** Every form of the credential a leak hunt looks for: raw, base64, URL-encoded, and the Basic header's base64 of `user:token`. */
export function pythonSecretForms(index: TestPythonIndex): string[] {
  return [index.token, Buffer.from(index.token).toString('base64'), encodeURIComponent(index.token), Buffer.from(`${index.username}:${index.token}`).toString('base64')];
}
