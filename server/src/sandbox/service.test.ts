import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DockerSandboxDriver } from './docker-driver';
import { RepoMirror } from './mirror';
import { SandboxService } from './service';
import { SnapshotManager } from './snapshots';

/*
 * The server's close ends in `SandboxService.shutdown` (runner/sandboxes.ts), which owns the
 * snapshot manager and so the node's dependency cache. No container is involved: a shutdown with
 * no sandbox held makes no Docker call, and the listener is asked nothing that goes upstream.
 */

/** The status of a POST to the cache (read-only: 405, answered without the registry). */
function post(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const outgoing = request(url, { method: 'POST', agent: false }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    outgoing.on('error', reject);
    outgoing.end();
  });
}

describe('SandboxService.shutdown', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'dockhand-service-shutdown-'));
  });
  afterEach(() => rmSync(dataDir, { recursive: true, force: true }));

  it('closes the dependency cache: a build listener still open refuses connections, and no new one starts', async () => {
    const docker = new Docker();
    const ownerId = `test-service-shutdown-${process.pid}`;
    const mirror = new RepoMirror(dataDir);
    const snapshots = new SnapshotManager({ docker, mirror, dataDir, ownerId });
    const service = new SandboxService({ driver: new DockerSandboxDriver({ docker, ownerId, runtime: 'runsc' }), mirror, snapshots });
    const cache = snapshots.dependencyCache;
    if (!cache) throw new Error('the snapshot manager made no dependency cache (it is on by default)');
    // As a snapshot build that the shutdown cuts short would have it.
    const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1' });
    expect(await post(listener.url)).toBe(405);

    await service.shutdown();

    await expect(post(listener.url)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await expect(cache.listen('127.0.0.1', { peer: '127.0.0.1' })).rejects.toThrow(/dependency cache is closed/);
  });
});
