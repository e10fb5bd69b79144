import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config';
import { DependencyCache } from '../sandbox/dep-cache';
import { nodeDependencyCache } from '../sandbox/create';
import { RepoMirror } from '../sandbox/mirror';
import { dependencyCacheSetting, mirrorFirst } from './sandboxes';
import { FakeSandboxProvider } from './testing/fakes';

describe('mirrorFirst', () => {
  it("keeps a class provider's release and reattach (methods on its prototype)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dockhand-mirror-first-'));
    try {
      const inner = new FakeSandboxProvider();
      const wrapped = mirrorFirst(inner, new RepoMirror(dir));
      expect(typeof wrapped.release).toBe('function');
      expect(typeof wrapped.reattach).toBe('function');
      const acquired = await inner.acquire({ baseSha: 'a'.repeat(40), taskId: 't1' });
      await wrapped.release(acquired.sandbox);
      expect(inner.released).toEqual([acquired.sandbox.id]);
      expect(await wrapped.reattach?.({ sandboxId: 'gone', baseSha: 'a'.repeat(40), taskId: 't1' })).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the dependency cache from the configuration', () => {
  it('is on at 4 GiB by default, off with DOCKHAND_DEP_CACHE=off, and bounded by DOCKHAND_DEP_CACHE_MAX_GIB', () => {
    expect(dependencyCacheSetting(loadConfig({}))).toEqual({ enabled: true, maxBytes: 4 * 1024 ** 3 });
    expect(dependencyCacheSetting(loadConfig({ DOCKHAND_DEP_CACHE: 'off' })).enabled).toBe(false);
    expect(dependencyCacheSetting(loadConfig({ DOCKHAND_DEP_CACHE_MAX_GIB: '0.5' })).maxBytes).toBe(512 * 1024 ** 2);
  });

  it('reaches the sandbox layer: no cache when off, else one under <dataDir>/dep-cache with the bound', async () => {
    const base = { dataDir: '/var/lib/dockhand', ownerId: 'o' };
    expect(nodeDependencyCache({ ...base, dependencyCache: { enabled: false, maxBytes: 1 } }, undefined)).toBe(false);
    // Not configured: the snapshot manager makes its default one.
    expect(nodeDependencyCache(base, undefined)).toBeUndefined();
    const cache = nodeDependencyCache({ ...base, registry: 'https://npm.example.com/', dependencyCache: { enabled: true, maxBytes: 2048 } }, undefined);
    expect(cache).toBeInstanceOf(DependencyCache);
    if (!(cache instanceof DependencyCache)) return;
    expect({ dir: cache.dir, maxBytes: cache.maxBytes, upstream: cache.upstream.href }).toEqual({ dir: '/var/lib/dockhand/dep-cache', maxBytes: 2048, upstream: 'https://npm.example.com/' });
    await cache.close();
  });
});
