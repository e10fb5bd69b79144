import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFixtureRepo, type FixtureRepo } from '../../../test/support/fixture-repo';
import { DockerSandboxDriver, LABELS } from './docker-driver';
import { RepoMirror } from './mirror';
import { WarmPool } from './pool';
import { SandboxService } from './service';
import { SnapshotManager } from './snapshots';
import { ensureBaseImage } from './test-support';

/*
 * The provisioning path on the ts-lib fixture: mirror → snapshot build (npm ci through the egress
 * proxy under runsc-egress) → sandboxes at the exact base commit → warm pool → shutdown/reconcile.
 * One snapshot build is shared by the whole file.
 */
const docker = new Docker();
const ownerId = `test-snapshots-${process.pid}`;
let dataDir: string;
let fixture: FixtureRepo;
let driver: DockerSandboxDriver;
let snapshots: SnapshotManager;
let pool: WarmPool;
let service: SandboxService;

beforeAll(async () => {
  ensureBaseImage();
  dataDir = mkdtempSync(join(tmpdir(), 'dockhand-snapshots-'));
  fixture = createFixtureRepo('ts-lib');
  driver = new DockerSandboxDriver({ docker, ownerId, runtime: 'runsc' });
  const mirror = new RepoMirror(dataDir);
  snapshots = new SnapshotManager({ docker, mirror, ownerId, egress: 'proxy', extraCaBundle: '/etc/ssl/certs/ca-certificates.crt' });
  pool = new WarmPool({ driver, size: 2 });
  service = new SandboxService({ driver, mirror, snapshots, pool });
});

afterAll(async () => {
  await service?.shutdown();
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(fixture.path, { recursive: true, force: true });
});

async function ours(): Promise<string[]> {
  const list = await docker.listContainers({ all: true, filters: { label: [`${LABELS.owner}=${ownerId}`] } });
  return list.map((container) => container.Id);
}

describe('snapshots and provisioning', () => {
  it('builds the snapshot once (cold), with dependencies installed and tests passing, offline', async () => {
    const first = await service.acquire({ repo: fixture.path, baseSha: fixture.sha, taskId: 't1' });
    expect(first.source).toBe('cold');
    expect(snapshots.builds).toBe(1);
    const head = await first.sandbox.exec({ cmd: ['git', 'rev-parse', 'HEAD'] });
    expect(head.stdout.trim()).toBe(fixture.sha);
    const test = await first.sandbox.exec({ cmd: ['npm', 'test'], timeoutMs: 60_000 });
    expect(test.exitCode, test.stdout + test.stderr).toBe(0);
    expect(test.stdout).toContain('Passed:    6');
    expect(await first.sandbox.diff()).toBe('');
    await service.release(first.sandbox);
  });

  it('reuses the snapshot for a second task on the same fingerprint and a new commit (no rebuild)', async () => {
    const sha = fixture.commit({ 'src/extra.ts': 'export const answer = 42;\n' }, 'add extra');
    const second = await service.acquire({ repo: fixture.path, baseSha: sha, taskId: 't2' });
    expect(snapshots.builds).toBe(1);
    expect(['snapshot', 'warm_pool']).toContain(second.source);
    const head = await second.sandbox.exec({ cmd: ['sh', '-c', 'git rev-parse HEAD && git status --porcelain && cat src/extra.ts'] });
    expect(head.stdout).toBe(`${sha}\nexport const answer = 42;\n`);
    await second.sandbox.writeFile('src/new.ts', 'export const x = 1;\n');
    await second.sandbox.writeFile('README.md', 'changed\n');
    const diff = await second.sandbox.diff();
    expect(diff).toContain('+++ b/src/new.ts');
    expect(diff).toContain('+++ b/README.md');
    expect(diff).not.toContain('node_modules');
    await service.release(second.sandbox);
  });

  it('hands out ready sandboxes from the warm pool', async () => {
    await pool.ready();
    expect(pool.idleCount()).toBe(2);
    const claimed = await service.acquire({ repo: fixture.path, baseSha: fixture.sha, taskId: 't3' });
    expect(claimed.source).toBe('warm_pool');
    const state = await claimed.sandbox.exec({ cmd: ['git', 'rev-parse', 'HEAD'] });
    expect(state.stdout.trim()).toBe(fixture.sha);
    await service.release(claimed.sandbox);
  });

  it('leaves nothing running after shutdown, and reconcile removes orphans', async () => {
    // An orphan: a labelled container a crashed server left behind.
    const orphan = await docker.createContainer({
      Image: 'dockhand/base:latest',
      Cmd: ['sleep', 'infinity'],
      Labels: { [LABELS.sandbox]: '1', [LABELS.owner]: ownerId },
      HostConfig: { Runtime: 'runsc', NetworkMode: 'none' },
    });
    await orphan.start();
    const { removed } = await driver.reconcile();
    expect(removed).toContain(orphan.id);
    await pool.ready();
    expect((await ours()).length).toBeGreaterThan(0);
    await service.shutdown();
    expect(await ours()).toEqual([]);
  });

  it('removes old snapshots but keeps the newest', async () => {
    const result = await snapshots.gcSnapshots({ maxAgeDays: 0, keep: 1 });
    const left = await docker.listImages({ filters: { label: ['dockhand.snapshot'] } });
    expect(left.length).toBeGreaterThanOrEqual(1);
    expect(result.removed.every((tag) => tag.startsWith('dockhand/snapshot:'))).toBe(true);
  });
});
