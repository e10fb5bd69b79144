import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DependencyCache, type DependencyCacheStats } from './dep-cache';
import { createNpmRepo, lockfileTarballs } from './dep-cache.test-support';
import { DockerSandboxDriver } from './docker-driver';
import { RepoMirror } from './mirror';
import { SnapshotManager, type Snapshot } from './snapshots';
import { createRepoFromFiles, ensureBaseImage, TEST_TOOLCHAIN_DIR } from './test-support';
import { ToolchainStore } from './toolchains';

/*
 * The node's dependency cache: first on the host against the real npm registry (hits, misses,
 * damaged entries, eviction, writes refused), then real snapshot builds under runsc-egress: a
 * second repository that shares dependencies with a first is served them from the cache, the key
 * does not depend on the cache, a damaged entry does not break a build, and a hostile install
 * cannot put anything into the cache.
 */
const CA = '/etc/ssl/certs/ca-certificates.crt';
const MS = '/ms/-/ms-2.1.3.tgz';

function fetchLocal(url: string, method = 'GET', body?: string, headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer; cache: string | undefined }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method, headers: body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks), cache: response.headers['x-dockhand-cache'] as string | undefined }));
      response.on('error', reject);
    });
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

/** The registry's own sha512 integrity for ms@2.1.3 (its packument, fetched directly). */
async function registryIntegrity(name: string, version: string): Promise<string> {
  const response = await fetch(`https://registry.npmjs.org/${name}/${version}`);
  const manifest = (await response.json()) as { dist: { integrity: string } };
  return manifest.dist.integrity;
}

function sri(body: Buffer): string {
  return `sha512-${createHash('sha512').update(body).digest('base64')}`;
}

/** Every file under the cache directory with its content hash. */
function cacheFiles(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (path: string): void => {
    for (const name of readdirSync(path)) {
      const full = join(path, name);
      if (statSync(full).isDirectory()) walk(full);
      else files.set(full, createHash('sha256').update(readFileSync(full)).digest('hex'));
    }
  };
  try {
    walk(dir);
  } catch {
    // no directory yet
  }
  return files;
}

describe('dependency cache on the host', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'dockhand-dep-cache-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves a tarball from upstream once, then from disk, byte for byte what the registry publishes', async () => {
    const cache = new DependencyCache({ dir, caBundle: CA });
    const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1' });
    try {
      const first = await fetchLocal(listener.url.replace(/\/$/, '') + MS);
      const second = await fetchLocal(listener.url.replace(/\/$/, '') + MS);
      expect([first.status, first.cache, second.status, second.cache]).toEqual([200, 'miss', 200, 'hit']);
      expect(sri(second.body)).toBe(await registryIntegrity('ms', '2.1.3'));
      expect(second.body.equals(first.body)).toBe(true);
      expect(listener.stats).toMatchObject({ hits: 1, misses: 1, corrupt: 0 });
      // Package documents pass through (and change upstream): never kept.
      const packument = await fetchLocal(`${listener.url}ms`);
      expect(packument.status).toBe(200);
      expect(JSON.parse(packument.body.toString('utf8')).name).toBe('ms');
      expect(listener.stats.passedThrough).toBe(1);
      await cache.idle();
      expect([...cacheFiles(dir).keys()].filter((path) => path.endsWith('.tgz'))).toHaveLength(1);
    } finally {
      await listener.close();
      await cache.close();
    }
  });

  it('refuses writes, keeps nothing a client sends, and never keeps a request made with credentials', async () => {
    const cache = new DependencyCache({ dir, caBundle: CA });
    const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1' });
    const before = cacheFiles(dir);
    try {
      const base = listener.url.replace(/\/$/, '');
      for (const method of ['PUT', 'POST', 'DELETE', 'PATCH']) {
        const answer = await fetchLocal(base + MS, method, 'evil');
        expect(answer.status, method).toBe(405);
        expect(answer.body.toString('utf8')).toContain('read-only');
      }
      expect((await fetchLocal(base + MS, 'GET', 'evil body')).cache).toBe('hit');
      const withToken = await fetchLocal(`${base}/once/-/once-1.4.0.tgz`, 'GET', undefined, { authorization: 'Bearer build-secret' });
      expect(withToken.status).toBe(200);
      expect(withToken.cache).toBeUndefined();
      await cache.idle();
      expect(cacheFiles(dir)).toEqual(before);
      expect(listener.stats.refused).toBe(4);
    } finally {
      await listener.close();
      await cache.close();
    }
  });

  it('treats a damaged entry as a miss and replaces it; a missing directory is an empty cache', async () => {
    const cache = new DependencyCache({ dir, caBundle: CA });
    const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1' });
    try {
      const content = [...cacheFiles(dir).keys()].find((path) => path.endsWith('.tgz'));
      expect(content).toBeDefined();
      writeFileSync(content ?? '', 'not the tarball');
      const answer = await fetchLocal(listener.url.replace(/\/$/, '') + MS);
      expect([answer.status, answer.cache]).toEqual([200, 'miss']);
      expect(sri(answer.body)).toBe(await registryIntegrity('ms', '2.1.3'));
      expect(listener.stats).toMatchObject({ corrupt: 1, misses: 1 });
      expect((await fetchLocal(listener.url.replace(/\/$/, '') + MS)).cache).toBe('hit');
    } finally {
      await listener.close();
      await cache.close();
    }
    rmSync(dir, { recursive: true, force: true });
    const fresh = new DependencyCache({ dir, caBundle: CA });
    const again = await fresh.listen('127.0.0.1', { peer: '127.0.0.1' });
    try {
      expect((await fetchLocal(again.url.replace(/\/$/, '') + MS)).cache).toBe('miss');
    } finally {
      await again.close();
      await fresh.close();
    }
  });

  it('keeps within its size bound by evicting the least recently used tarballs', async () => {
    const small = mkdtempSync(join(tmpdir(), 'dockhand-dep-cache-small-'));
    // ms 2.1.3 is about 2.7 kB, once 1.4.0 about 2 kB, wrappy 1.0.2 about 1.7 kB: room for two.
    const cache = new DependencyCache({ dir: small, caBundle: CA, maxBytes: 5_000 });
    const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1' });
    try {
      const base = listener.url.replace(/\/$/, '');
      for (const path of [MS, '/once/-/once-1.4.0.tgz']) await fetchLocal(base + path);
      await cache.idle();
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect((await fetchLocal(base + MS)).cache).toBe('hit'); // ms is now the most recently used
      await fetchLocal(`${base}/wrappy/-/wrappy-1.0.2.tgz`);
      await cache.idle();
      expect(cache.stats.evictions).toBeGreaterThan(0);
      expect(await cache.size()).toBeLessThanOrEqual(5_000);
      expect((await fetchLocal(`${base}/once/-/once-1.4.0.tgz`)).cache).toBe('miss');
    } finally {
      await listener.close();
      await cache.close();
      rmSync(small, { recursive: true, force: true });
    }
  });
});

describe('dependency cache in snapshot builds (runsc-egress)', () => {
  const docker = new Docker();
  const ownerId = `test-dep-cache-${process.pid}`;
  const repository = `dockhand/dep-cache-test-${process.pid}`;
  const sources = new Map<string, string>();
  let dataDir: string;
  let mirror: RepoMirror;
  let toolchains: ToolchainStore;
  let snapshots: SnapshotManager;
  let driver: DockerSandboxDriver;
  const cleanup: string[] = [];

  beforeAll(() => {
    ensureBaseImage();
    dataDir = mkdtempSync(join(tmpdir(), 'dockhand-dep-cache-builds-'));
    mirror = new RepoMirror(dataDir, { sources: (name) => sources.get(name) ?? name });
    toolchains = new ToolchainStore({ dataDir: TEST_TOOLCHAIN_DIR, caBundle: CA });
    snapshots = new SnapshotManager({ docker, mirror, dataDir, ownerId, repository, egress: 'proxy', extraCaBundle: CA, toolchains });
    driver = new DockerSandboxDriver({ docker, ownerId, runtime: 'runsc' });
  });

  afterAll(async () => {
    await driver?.destroyAll();
    await snapshots?.dependencyCache?.close();
    for (const image of await docker.listImages({ filters: { reference: [repository] } })) {
      await docker.getImage(image.Id).remove({ force: true }).catch(() => undefined);
    }
    for (const path of [dataDir, ...cleanup]) rmSync(path, { recursive: true, force: true });
  });

  function register(name: string, dependencies: Record<string, string>, extra: Record<string, string> = {}): { sha: string; tarballs: string[] } {
    const repo = createNpmRepo(name.replace('/', '-'), dependencies, extra);
    sources.set(name, repo.path);
    cleanup.push(repo.path);
    return { sha: repo.sha, tarballs: lockfileTarballs(readFileSync(join(repo.path, 'package-lock.json'), 'utf8')) };
  }

  async function build(manager: SnapshotManager, name: string, sha: string, rebuild = false): Promise<{ snapshot: Snapshot; delta: DependencyCacheStats; log: string }> {
    const before = { ...(snapshots.dependencyCache?.stats ?? ({} as DependencyCacheStats)) };
    const snapshot = await manager.resolve({ repo: name, mirrorPath: await mirror.ensure(name, sha), sha, rebuild });
    const after = snapshots.dependencyCache?.stats ?? ({} as DependencyCacheStats);
    const delta = Object.fromEntries(Object.entries(after).map(([field, value]) => [field, value - (before[field as keyof DependencyCacheStats] ?? 0)])) as unknown as DependencyCacheStats;
    return { snapshot, delta, log: readFileSync(join(dataDir, 'snapshot-logs', `${snapshot.key}.log`), 'utf8') };
  }

  let alpha: { sha: string; tarballs: string[] };
  let alphaSnapshot: Snapshot;

  it('a second repository sharing dependencies gets exactly the shared tarballs from the cache', async () => {
    alpha = register('acme/alpha', { debug: '4.3.7', ms: '2.1.3', once: '1.4.0' });
    const beta = register('acme/beta', { debug: '4.3.7', once: '1.4.0', inherits: '2.0.4' });
    const shared = beta.tarballs.filter((path) => alpha.tarballs.includes(path));
    expect(shared.length).toBeGreaterThanOrEqual(4); // debug, ms, once, wrappy

    const first = await build(snapshots, 'acme/alpha', alpha.sha);
    alphaSnapshot = first.snapshot;
    expect(first.delta).toMatchObject({ hits: 0, misses: alpha.tarballs.length });
    expect(first.log).toContain(`# dependency cache: 0 hits`);

    const second = await build(snapshots, 'acme/beta', beta.sha);
    expect(second.snapshot.built).toBe(true);
    expect(second.delta).toMatchObject({ hits: shared.length, misses: beta.tarballs.length - shared.length, corrupt: 0 });
    expect(second.log).toContain(`# dependency cache: ${shared.length} hits`);

    const sandbox = await driver.create({ image: second.snapshot.image, baseSha: second.snapshot.sha, snapshot: second.snapshot.identity });
    const check = await sandbox.exec({ cmd: ['sh', '-c', 'node -e "require(\'debug\'); require(\'once\'); require(\'inherits\'); console.log(\'ok\')" && git status --porcelain'] });
    expect(check.exitCode, check.stderr).toBe(0);
    expect(check.stdout).toBe('ok\n');
    await sandbox.destroy();
  });

  it('the snapshot key is the same without the cache', async () => {
    const plain = new SnapshotManager({ docker, mirror, dataDir, ownerId, repository, egress: 'proxy', extraCaBundle: CA, toolchains, dependencyCache: false });
    const found = await plain.resolve({ repo: 'acme/alpha', mirrorPath: await mirror.ensure('acme/alpha', alpha.sha), sha: alpha.sha });
    expect(found.built).toBe(false);
    expect(found.key).toBe(alphaSnapshot.key);
    expect(plain.dependencyCache).toBeUndefined();
  });

  it('a damaged cache entry does not break a build: it is fetched again', async () => {
    const cacheDir = join(dataDir, 'dep-cache');
    const record = [...cacheFiles(cacheDir).keys()].find((path) => path.endsWith('.json') && JSON.parse(readFileSync(path, 'utf8')).path === alpha.tarballs[0]);
    writeFileSync((record ?? '').replace(/\.json$/, '.tgz'), 'garbage');
    const again = await build(snapshots, 'acme/alpha', alpha.sha, true);
    expect(again.snapshot.key).toBe(alphaSnapshot.key);
    expect(again.delta).toMatchObject({ corrupt: 1, misses: 1, hits: alpha.tarballs.length - 1 });
  });

  it('a pnpm repository reads the same cache (pnpm takes the registry from npm_config_registry)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dockhand-dep-cache-pnpm-'));
    cleanup.push(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'pnpm-repo', version: '1.0.0', dependencies: { debug: '4.3.7', once: '1.4.0' } }));
    const pnpm = await toolchains.ensure('pnpm', '9.15.9');
    execFileSync(process.execPath, [join(pnpm.hostPath, 'bin/pnpm.cjs'), 'install', '--lockfile-only', '--no-frozen-lockfile'], { cwd: dir, stdio: 'ignore' });
    const repo = createRepoFromFiles({ 'package.json': readFileSync(join(dir, 'package.json'), 'utf8'), 'pnpm-lock.yaml': readFileSync(join(dir, 'pnpm-lock.yaml'), 'utf8'), '.gitignore': 'node_modules/\n' });
    sources.set('acme/pnpm', repo.path);
    cleanup.push(repo.path);
    const result = await build(snapshots, 'acme/pnpm', repo.sha);
    expect(result.snapshot.environment.packageManager?.name).toBe('pnpm');
    // debug, ms, once, wrappy: all fetched by alpha's build before.
    expect(result.delta).toMatchObject({ hits: 4, misses: 0 });
    expect(result.log).toContain('# dependency cache: 4 hits');

    // pnpm 11 reads pnpm_config_* only (census tinylibs/tinybench): the same lockfile through the
    // cache, its store on /tmp's tmpfs (copied from, never hard-linked into the committed layer).
    const eleven = createRepoFromFiles({
      'package.json': JSON.stringify({ ...JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')), packageManager: 'pnpm@11.20.0' }),
      'pnpm-lock.yaml': readFileSync(join(dir, 'pnpm-lock.yaml'), 'utf8'),
      '.gitignore': 'node_modules/\n',
    });
    sources.set('acme/pnpm11', eleven.path);
    cleanup.push(eleven.path);
    const newer = await build(snapshots, 'acme/pnpm11', eleven.sha);
    expect(newer.snapshot.environment.packageManager).toMatchObject({ name: 'pnpm', version: '11.20.0' });
    expect(newer.delta).toMatchObject({ hits: 4, misses: 0 });
    expect(newer.log).toContain('Content-addressable store is at: /tmp/pnpm-store');
  });

  it('a hostile install cannot write the cache: writes refused, what it sends never kept', async () => {
    const hostile = `
const http = require('http');
const base = process.env.npm_config_registry;
const ask = (method, path, body) => new Promise((done) => {
  const out = http.request(new URL(path, base), { method, headers: body ? { 'content-length': Buffer.byteLength(body) } : {} }, (res) => { res.resume(); res.on('end', () => done(res.statusCode)); });
  out.on('error', (error) => done(String(error)));
  out.end(body);
});
(async () => {
  for (const method of ['PUT', 'POST', 'DELETE']) console.log('HOSTILE', method, await ask(method, '/ms/-/ms-2.1.3.tgz', 'poisoned'));
  console.log('HOSTILE GET-with-body', await ask('GET', '/ms/-/ms-2.1.3.tgz', 'poisoned'));
  console.log('HOSTILE traversal', await ask('GET', '/ms/-/..%2f..%2f..%2fetc%2fpasswd.tgz'));
  const fs = require('fs');
  console.log('HOSTILE cache dir visible', fs.existsSync(${JSON.stringify(join(dataDir, 'dep-cache'))}));
})();
`;
    const mallory = register('acme/mallory', { ms: '2.1.3' }, { 'hostile.js': hostile, '.dockhand/environment.yml': 'install: npm ci && node hostile.js\n' });
    const before = cacheFiles(join(dataDir, 'dep-cache'));
    const refusedBefore = snapshots.dependencyCache?.stats.refused ?? 0;
    const result = await build(snapshots, 'acme/mallory', mallory.sha);
    expect(result.log).toContain('HOSTILE PUT 405');
    expect(result.log).toContain('HOSTILE POST 405');
    expect(result.log).toContain('HOSTILE DELETE 405');
    expect(result.log).toContain('HOSTILE GET-with-body 200');
    expect(result.log).toMatch(/HOSTILE traversal (404|400|403)/);
    expect(result.log).toContain('HOSTILE cache dir visible false');
    expect((snapshots.dependencyCache?.stats.refused ?? 0) - refusedBefore).toBe(3);
    // Not one byte changed: ms was already kept, and nothing else was asked of it as a tarball.
    expect(cacheFiles(join(dataDir, 'dep-cache'))).toEqual(before);
  });
});
