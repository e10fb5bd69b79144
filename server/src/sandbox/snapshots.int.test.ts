import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFixtureRepo, type FixtureRepo } from '../../../test/support/fixture-repo';
import { DockerSandboxDriver, LABELS } from './docker-driver';
import { RepoMirror } from './mirror';
import { WarmPool } from './pool';
import { SandboxService } from './service';
import { SnapshotManager } from './snapshots';
import { ensureBaseImage, TEST_TOOLCHAIN_DIR } from './test-support';
import { ToolchainStore } from './toolchains';

/*
 * The provisioning path on the ts-lib fixture: mirror → snapshot build (npm ci through the egress
 * proxy under runsc-egress) → sandboxes at the exact base commit → warm pool → shutdown/reconcile.
 * One snapshot build is shared by the whole file.
 */
const docker = new Docker();
const ownerId = `test-snapshots-${process.pid}`;
/** A repository of our own, so earlier runs' snapshots are not reused and gc touches nothing else. */
const repository = `dockhand/snapshot-test-${process.pid}`;
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
  snapshots = new SnapshotManager({ docker, mirror, dataDir, ownerId, repository, egress: 'proxy', extraCaBundle: '/etc/ssl/certs/ca-certificates.crt', toolchains: new ToolchainStore({ dataDir: TEST_TOOLCHAIN_DIR, caBundle: '/etc/ssl/certs/ca-certificates.crt' }) });
  pool = new WarmPool({ driver, size: 2 });
  service = new SandboxService({ driver, mirror, snapshots, pool });
});

afterAll(async () => {
  await service?.shutdown();
  for (const image of await docker.listImages({ filters: { reference: [repository] } })) {
    await docker.getImage(image.Id).remove({ force: true }).catch(() => undefined);
  }
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

  it('answers a repeated lookup from its cache (in memory and on disk), and looks up afresh when the entry does not hold', async () => {
    const mirror = new RepoMirror(dataDir);
    const mirrorPath = await mirror.ensure(fixture.path, fixture.sha);
    const baseId = (await docker.getImage(snapshots.baseImage).inspect()).Id;
    const request = { repo: fixture.path, mirrorPath, sha: fixture.sha };
    const first = await snapshots.lookup(request, baseId);
    // The cold acquire above looked this commit up already.
    expect(first.cached).toBe(true);
    const fresh = new SnapshotManager({ docker, mirror, dataDir, ownerId, repository, toolchains: snapshots.toolchains });
    const again = await fresh.lookup(request, baseId);
    expect(again).toEqual(first);
    // Another base image is another lookup with another key.
    const other = await fresh.lookup(request, `${baseId}-other`);
    expect(other.cached).toBe(false);
    expect(other.key).not.toBe(first.key);
    // A tampered entry (its recipe hash no longer matches its recipe) is not trusted.
    const index = join(dataDir, 'snapshot-index');
    for (const name of readdirSync(index)) {
      const entry = JSON.parse(readFileSync(join(index, name), 'utf8'));
      entry.identity.environment.test.command = 'true';
      writeFileSync(join(index, name), JSON.stringify(entry));
    }
    const third = new SnapshotManager({ docker, mirror, dataDir, ownerId, repository, toolchains: snapshots.toolchains });
    const redone = await third.lookup(request, baseId);
    expect(redone.cached).toBe(false);
    expect(redone.key).toBe(first.key);
    expect(redone.identity.environment.test.command).toBe(first.identity.environment.test.command);
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
    const labelled = async (labels: Record<string, string>): Promise<string> => {
      const container = await docker.createContainer({
        Image: 'dockhand/base:latest',
        Cmd: ['sleep', 'infinity'],
        Labels: { [LABELS.sandbox]: '1', ...labels },
        HostConfig: { Runtime: 'runsc', NetworkMode: 'none' },
      });
      await container.start();
      return container.id;
    };
    // Orphans: one of ours this driver does not hold, one of a crashed server on this host (a pid
    // that is not running). Not an orphan: one of another live server (this test process's pid).
    const ownLeftover = await labelled({ [LABELS.owner]: ownerId });
    const crashed = await labelled({ [LABELS.owner]: 'crashed-server', [LABELS.ownerHost]: hostname(), [LABELS.ownerPid]: '999999' });
    const otherLive = await labelled({ [LABELS.owner]: 'other-live-server', [LABELS.ownerHost]: hostname(), [LABELS.ownerPid]: String(process.pid) });
    const { removed } = await driver.reconcile();
    expect(removed).toEqual(expect.arrayContaining([ownLeftover, crashed]));
    expect(removed).not.toContain(otherLive);
    await docker.getContainer(otherLive).remove({ force: true });
    await pool.ready();
    expect((await ours()).length).toBeGreaterThan(0);
    await service.shutdown();
    expect(await ours()).toEqual([]);
  });

  it('gives the install step only the allowlisted registries: no direct route, proxy refuses other hosts', async () => {
    const probe = createFixtureRepo('ts-lib');
    const check = [
      'set -u',
      'if timeout 5 bash -c "echo > /dev/tcp/1.1.1.1/443" 2>/dev/null; then echo "direct egress is open" >&2; exit 1; fi',
      'proxy=${HTTPS_PROXY#http://}; host=${proxy%:*}; port=${proxy##*:}',
      'code=$(node -e "require(\'http\').request({host:process.argv[1],port:+process.argv[2],method:\'CONNECT\',path:\'example.com:443\'}).on(\'connect\',r=>{console.log(r.statusCode);process.exit(0)}).on(\'error\',e=>{console.log(e.code);process.exit(0)}).end()" "$host" "$port")',
      '[ "$code" = 403 ] || { echo "proxy let example.com through: $code" >&2; exit 1; }',
      '',
    ].join('\n');
    const sha = probe.commit({ '.dockhand/setup.sh': check }, 'egress probe');
    const mirror = new RepoMirror(dataDir);
    const probeSnapshots = new SnapshotManager({ docker, mirror, dataDir, ownerId, repository, egress: 'proxy', extraCaBundle: '/etc/ssl/certs/ca-certificates.crt' });
    const snapshot = await probeSnapshots.resolve({ repo: probe.path, mirrorPath: await mirror.ensure(probe.path, sha), sha });
    expect(snapshot.built).toBe(true);
    rmSync(probe.path, { recursive: true, force: true });
  });

  it('removes old snapshots but keeps the newest', async () => {
    // Two images now: the ts-lib snapshot and the (newer) egress-probe snapshot.
    expect(await docker.listImages({ filters: { reference: [repository] } })).toHaveLength(2);
    const result = await snapshots.gcSnapshots({ maxAgeDays: 0, keep: 1 });
    expect(result.removed).toHaveLength(1);
    const left = await docker.listImages({ filters: { reference: [repository] } });
    expect(left).toHaveLength(1);
    expect(result.removed.every((tag) => tag.startsWith(`${repository}:`))).toBe(true);
  });
});
