import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DependencyCache } from './dep-cache';
import type { PrivateRegistry } from './private-registries';
import { PRIVATE_PACKAGE, testRegistry, type TestRegistry } from './private-registry.test-support';

/*
 * The registry front's credential path against a real authenticating registry (Verdaccio,
 * `.ci/needs/verdaccio.sh`) and the public npm registry, with the real npm client on this host:
 * the client holds no credential, the front adds the repository's, and nothing private is kept.
 */

const CA = existsSync('/etc/ssl/certs/ca-certificates.crt') ? '/etc/ssl/certs/ca-certificates.crt' : undefined;
let registry: TestRegistry;
let scratch: string;
let cache: DependencyCache;

beforeAll(async () => {
  registry = await testRegistry();
  scratch = mkdtempSync(join(tmpdir(), 'dep-cache-private-'));
  cache = new DependencyCache({ dir: join(scratch, 'cache'), ...(CA ? { caBundle: CA } : {}) });
});
afterAll(async () => {
  await cache.close();
  rmSync(scratch, { recursive: true, force: true });
});

const acme = (token: string): PrivateRegistry => ({ scope: '@acme', url: new URL(registry.url), authorization: `Bearer ${token}`, secret: 'NPM_ACME' });

/** Every file the cache keeps, as text (records name the tarball paths they hold). */
function keptText(): string {
  const root = join(scratch, 'cache');
  const walk = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { withFileTypes: true }).flatMap((entry) => (entry.isDirectory() ? walk(join(dir, entry.name)) : [join(dir, entry.name)])) : []);
  return walk(root).map((file) => readFileSync(file).toString('latin1')).join('\n');
}

describe('the registry front with a repository\'s private registry', () => {
  it('serves the private package to a client without credentials, points its tarballs at the front and keeps nothing of it', async () => {
    const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1', registries: [acme(registry.token)] });
    try {
      const document = await fetch(new URL('@acme%2fprivate-utils', listener.url));
      expect(document.status).toBe(200);
      const text = await document.text();
      expect(text).not.toContain(registry.url);
      const tarball = JSON.parse(text).versions['1.0.0'].dist.tarball as string;
      expect(tarball).toBe(`${listener.url}@acme/private-utils/-/private-utils-1.0.0.tgz`);
      const body = Buffer.from(await (await fetch(tarball)).arrayBuffer());
      expect(body.length).toBeGreaterThan(100);
      expect(listener.stats.misses + listener.stats.hits).toBe(0);
      expect(keptText()).not.toContain('private-utils');
      expect(listener.refusals).toEqual([]);
      // The build's audit: two requests went upstream with NPM_ACME's credential (the document, the tarball).
      expect([...listener.secretUses]).toEqual([['NPM_ACME', 2]]);
    } finally {
      await listener.close();
    }
  });

  it('another repository\'s build (no registry configured) cannot get the private package: the public registry has none, the cache has none', async () => {
    const first = await cache.listen('127.0.0.1', { peer: '127.0.0.1', registries: [acme(registry.token)] });
    await (await fetch(`${first.url}@acme/private-utils/-/private-utils-1.0.0.tgz`)).arrayBuffer();
    await first.close();
    const other = await cache.listen('127.0.0.1', { peer: '127.0.0.1' });
    try {
      expect((await fetch(`${other.url}@acme/private-utils/-/private-utils-1.0.0.tgz`)).status).toBe(404);
      expect((await fetch(`${other.url}@acme%2fprivate-utils`)).status).toBe(404);
      expect(other.stats.hits).toBe(0);
      expect(other.secretUses.size).toBe(0);
    } finally {
      await other.close();
    }
  });

  it('a wrong token: the registry\'s 401 reaches the client and is recorded with the secret\'s name, never its value', async () => {
    const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1', registries: [acme('not-the-token')] });
    try {
      expect((await fetch(new URL('@acme%2fprivate-utils', listener.url))).status).toBe(401);
      expect(listener.refusals).toEqual([{ registry: registry.url, scope: '@acme', secret: 'NPM_ACME', status: 401, path: '/@acme%2fprivate-utils' }]);
      expect(JSON.stringify(listener.refusals)).not.toContain('not-the-token');
    } finally {
      await listener.close();
    }
  });

  it('npm installs the private package and a public one through the front with no credential anywhere in the project or its config', async () => {
    const project = join(scratch, 'app');
    execFileSync('mkdir', ['-p', project]);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, dependencies: { [PRIVATE_PACKAGE]: '1.0.0', 'is-number': '7.0.0' } }));
    const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1', registries: [acme(registry.token)] });
    try {
      const home = join(scratch, 'home');
      execFileSync('mkdir', ['-p', home]);
      // Not execFileSync: the front answers on this process's event loop.
      await promisify(execFile)('npm', ['install', '--no-audit', '--no-fund'], {
        cwd: project,
        env: { PATH: process.env.PATH ?? '', HOME: home, npm_config_registry: listener.url, npm_config_cache: join(scratch, 'npm-cache'), npm_config_userconfig: join(home, '.npmrc'), ...(CA ? { NODE_EXTRA_CA_CERTS: CA } : {}) },
        timeout: 120_000,
      });
      expect(execFileSync('node', ['-e', `process.stdout.write(require('${PRIVATE_PACKAGE}').shout('hi') + require('is-number')(3))`], { cwd: project }).toString()).toBe('HI!true');
      const lock = readFileSync(join(project, 'package-lock.json'), 'utf8');
      expect(lock).toContain('private-utils-1.0.0.tgz');
      expect(lock).not.toContain(registry.token);
      expect(existsSync(join(home, '.npmrc'))).toBe(false);
      // The public tarball is kept; the private one is not.
      expect(listener.stats.misses + listener.stats.hits).toBe(1);
      expect(keptText()).not.toContain('private-utils');
      expect(keptText()).toContain('/is-number/-/is-number-7.0.0.tgz');
    } finally {
      await listener.close();
    }
  });
});
