import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DependencyCache } from './dep-cache';
import { pipIndexUrlAtFront } from './dep-cache-pip';
import { pythonSecretForms, testPythonIndex, type TestPythonIndex } from './pip-index.test-support';
import { resolveBuildRegistries, type PrivateRegistry } from './private-registries';

/*
 * The registry front's Python index path against a real authenticating index (nginx auth_basic,
 * `.ci/needs/pyindex.sh`) with Debian's real pip on this host: pip holds no credential, the front
 * adds the repository's, rewrites the simple page's file links to itself and keeps nothing.
 */

let index: TestPythonIndex;
let scratch: string;
let cache: DependencyCache;

beforeAll(async () => {
  index = await testPythonIndex();
  scratch = mkdtempSync(join(tmpdir(), 'dep-cache-pip-'));
  cache = new DependencyCache({ dir: join(scratch, 'cache') });
});
afterAll(async () => {
  await cache.close();
  rmSync(scratch, { recursive: true, force: true });
});

/** The build's registries for a repository whose secret PYPI_ACME holds `token`. */
async function registries(token: string): Promise<PrivateRegistry[]> {
  return resolveBuildRegistries({
    repo: 'acme/py',
    usedBy: 'test',
    registries: [],
    pythonIndex: { url: index.url, username: index.username, token: 'PYPI_ACME' },
    credentials: async () => ({ values: new Map([['PYPI_ACME', token]]), missing: [] }),
    allowed: [new URL(index.url).origin],
    frontMissing: undefined,
  });
}

function keptText(): string {
  const walk = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)])) : []);
  return walk(join(scratch, 'cache')).map((file) => readFileSync(file).toString('latin1')).join('\n');
}

const pip = (args: string[], env: Record<string, string>) =>
  promisify(execFile)('/usr/bin/python3', ['-m', 'pip', ...args], { env: { PATH: process.env.PATH ?? '', HOME: scratch, PIP_NO_CACHE_DIR: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1', PIP_CONFIG_FILE: '/dev/null', ...env }, timeout: 120_000 });

describe('pip through the registry front with a repository\'s Python index', () => {
  it('the index itself refuses a request without credentials (a real 401)', async () => {
    expect((await fetch(index.url)).status).toBe(401);
  });

  it('serves the simple page with every file link at the front, and pip installs both the wheel and the sdist with no credential', async () => {
    const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1', registries: await registries(index.token) });
    try {
      const indexUrl = pipIndexUrlAtFront(listener.url, { url: index.url, token: 'PYPI_ACME' });
      expect(indexUrl).toBe(`${listener.url}-/pip/simple/`);
      const page = await (await fetch(`${indexUrl}acme-private-utils/`)).text();
      expect(page).not.toContain(new URL(index.url).host);
      expect(page).toContain(`href="${listener.url}-/pip/packages/acme_private_utils-1.0.0-py3-none-any.whl#sha256=`);
      expect(page).toContain('href="../../packages/acme-private-utils-1.0.0.tar.gz#sha256=');
      // The wheel (absolute link, rewritten) and the sdist (relative link), each installed and imported.
      for (const [kind, flag] of [['wheel', '--only-binary=:all:'], ['sdist', '--no-binary=:all:']] as const) {
        const target = join(scratch, `site-${kind}`);
        await pip(['install', '--no-build-isolation', flag, '--target', target, 'acme-private-utils==1.0.0'], { PIP_INDEX_URL: indexUrl });
        const { stdout } = await promisify(execFile)('/usr/bin/python3', ['-c', 'import acme_private_utils as a; print(a.shout("hi"))'], { env: { PYTHONPATH: target } });
        expect(stdout.trim()).toBe('HI!');
      }
      expect(listener.refusals).toEqual([]);
      expect(listener.secretUses.get('PYPI_ACME')).toBeGreaterThanOrEqual(4);
      expect(listener.stats.hits + listener.stats.misses).toBe(0);
      expect(keptText()).not.toContain('acme');
      for (const form of pythonSecretForms(index)) expect(page).not.toContain(form);
    } finally {
      await listener.close();
    }
  });

  it('a build whose repository names no Python index gets 404 on the pip path, and no request goes upstream', async () => {
    const other = await cache.listen('127.0.0.1', { peer: '127.0.0.1' });
    try {
      expect((await fetch(`${other.url}-/pip/simple/acme-private-utils/`)).status).toBe(404);
      expect((await fetch(`${other.url}-/pip/packages/acme_private_utils-1.0.0-py3-none-any.whl`)).status).toBe(404);
      expect(other.secretUses.size).toBe(0);
    } finally {
      await other.close();
    }
  });

  it('a wrong secret: pip sees the index\'s 401, and the refusal is recorded with the secret\'s name, never its value', async () => {
    const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1', registries: await registries('not-the-password') });
    try {
      const indexUrl = pipIndexUrlAtFront(listener.url, { url: index.url, token: 'PYPI_ACME' });
      // pip would ask for a user name on a 401 (the build's pip never asks: PIP_NO_INPUT, pipFrontEnvironment),
      // and without asking says only that nothing matched: the front's record is what names the 401.
      await expect(pip(['download', '--no-deps', '-d', join(scratch, 'dl'), 'acme-private-utils'], { PIP_INDEX_URL: indexUrl, PIP_NO_INPUT: '1' })).rejects.toThrow(/No matching distribution found for acme-private-utils/);
      expect(listener.refusals[0]).toEqual({ registry: `${new URL(index.url).origin}/`, kind: 'python-index', secret: 'PYPI_ACME', status: 401, path: '/simple/acme-private-utils/' });
      expect(JSON.stringify(listener.refusals)).not.toContain('not-the-password');
    } finally {
      await listener.close();
    }
  });
});
