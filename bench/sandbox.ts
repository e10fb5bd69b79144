/**
 * Sandbox start-up benchmark on the ts-lib fixture, one run, real Docker + gVisor:
 *   cold      snapshot built without cache (base image + repo + npm ci through the egress proxy)
 *             and a sandbox created from it, workspace verified at the base commit;
 *   snapshot  a new sandbox from the existing snapshot, workspace verified at the base commit;
 *   warm      a claim from the warm pool (the pool refills between claims, untimed).
 * Extra figures: moving a sandbox's workspace to a newer commit (git bundle), and the memory an
 * idle sandbox holds. The last line of output is one JSON object.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Docker from 'dockerode';
import { containerMemoryMiB } from './container-memory';
import pino from 'pino';
import { createFixtureRepo } from '../test/support/fixture-repo';
import { DockerSandboxDriver } from '../server/src/sandbox/docker-driver';
import { checkSandboxHost } from '../server/src/sandbox/host-check';
import { RepoMirror } from '../server/src/sandbox/mirror';
import { WarmPool } from '../server/src/sandbox/pool';
import { SnapshotManager, type Snapshot } from '../server/src/sandbox/snapshots';

const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 3);
const SNAPSHOT_RUNS = Number(process.env.BENCH_SNAPSHOT_RUNS ?? 10);
const WARM_RUNS = Number(process.env.BENCH_WARM_RUNS ?? 10);

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

function report(name: string, ms: number[]): { p50: number; p95: number } {
  const p50 = percentile(ms, 50) / 1000;
  const p95 = percentile(ms, 95) / 1000;
  console.log(`${name.padEnd(22)} n=${String(ms.length).padStart(2)}  p50 ${p50.toFixed(3)} s  p95 ${p95.toFixed(3)} s`);
  return { p50, p95 };
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

async function main(): Promise<void> {
  execFileSync('bash', [resolve(import.meta.dirname, '../sandbox-images/base/build.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
  const docker = new Docker();
  const host = await checkSandboxHost(docker);
  const ownerId = `bench-sandbox-${process.pid}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'dockhand-bench-'));
  const fixture = createFixtureRepo('ts-lib');
  // fixture.commit() moves fixture.sha; the snapshot's commit stays this one.
  const baseSha = fixture.sha;
  const logger = pino({ level: 'warn' }, pino.destination(2));
  const driver = new DockerSandboxDriver({ docker, ownerId, runtime: host.runtime, logger });
  const mirror = new RepoMirror(dataDir);
  const snapshots = new SnapshotManager({ docker, mirror, dataDir, ownerId, egress: host.egressRuntime ? 'proxy' : 'runc-bridge', extraCaBundle: '/etc/ssl/certs/ca-certificates.crt' });
  const pool = new WarmPool({ driver, size: 2, logger });
  try {
    const mirrorPath = await mirror.ensure(fixture.path, baseSha);
    console.log(`runtime ${host.runtime}, docker ${host.dockerVersion}, fixture ts-lib @ ${baseSha.slice(0, 12)}`);

    const cold: number[] = [];
    let snapshot: Snapshot | undefined;
    for (let run = 0; run < COLD_RUNS; run += 1) {
      const { ms, value } = await timed(async () => {
        const built = await snapshots.resolve({ repo: fixture.path, mirrorPath, sha: baseSha, rebuild: true });
        const sandbox = await driver.create({ image: built.image, baseSha: baseSha, snapshot: built.identity });
        return { snapshot: built, sandbox };
      });
      cold.push(ms);
      snapshot = value.snapshot;
      await value.sandbox.destroy();
      console.log(`  cold ${run + 1}: ${(ms / 1000).toFixed(2)} s`);
    }

    if (!snapshot) throw new Error('no snapshot was built');
    const { image, identity } = snapshot;
    const fromSnapshot: number[] = [];
    for (let run = 0; run < SNAPSHOT_RUNS; run += 1) {
      const { ms, value } = await timed(() => driver.create({ image, baseSha: baseSha, snapshot: identity }));
      fromSnapshot.push(ms);
      await value.destroy();
    }

    // A newer commit on the same lockfile: the snapshot's workspace is moved with a thin bundle.
    const newer = fixture.commit({ 'src/extra.ts': 'export const answer = 42;\n' }, 'newer commit');
    await mirror.ensure(fixture.path, newer);
    const moved: number[] = [];
    for (let run = 0; run < 5; run += 1) {
      const { ms, value } = await timed(() => driver.create({ image, baseSha: newer, snapshot: identity, bundle: () => mirror.bundle(mirrorPath, newer, baseSha) }));
      moved.push(ms);
      await value.destroy();
    }

    pool.warm(snapshot);
    const warm: number[] = [];
    let idleMiB = Number.NaN;
    for (let run = 0; run < WARM_RUNS; run += 1) {
      await pool.ready();
      if (run === 0) {
        await new Promise((done) => setTimeout(done, 2000));
        const idle = [...driver.liveSandboxes.values()];
        const figures = await Promise.all(idle.map((sandbox) => containerMemoryMiB(docker, sandbox.id)));
        idleMiB = figures.reduce((sum, value) => sum + value, 0) / Math.max(1, figures.length);
      }
      const { ms, value } = await timed(() => pool.claim(snapshot, baseSha, () => mirror.bundle(mirrorPath, baseSha)));
      if (!value) throw new Error('the warm pool had no idle sandbox');
      warm.push(ms);
      await value.destroy();
    }
    await pool.ready();
    const warmMoved: number[] = [];
    for (let run = 0; run < 5; run += 1) {
      await pool.ready();
      const { ms, value } = await timed(() => pool.claim(snapshot, newer, () => mirror.bundle(mirrorPath, newer, baseSha)));
      if (!value) throw new Error('the warm pool had no idle sandbox');
      warmMoved.push(ms);
      await value.destroy();
    }

    console.log('');
    const a = report('cold (build + start)', cold);
    const b = report('from snapshot', fromSnapshot);
    const c = report('warm claim', warm);
    report('snapshot + new commit', moved);
    report('warm + new commit', warmMoved);
    console.log(`idle sandbox memory     ${idleMiB.toFixed(1)} MiB (usage minus page cache, runsc)`);
    console.log(`cold/snapshot ${(a.p50 / b.p50).toFixed(1)}x   cold/warm ${(a.p50 / c.p50).toFixed(1)}x   targets: snapshot p50 < 1.5 s, warm p50 < 0.3 s`);
    console.log(
      JSON.stringify({
        cold_p50_s: round(a.p50),
        cold_p95_s: round(a.p95),
        snapshot_p50_s: round(b.p50),
        snapshot_p95_s: round(b.p95),
        warm_p50_s: round(c.p50),
        warm_p95_s: round(c.p95),
        snapshot_new_commit_p50_s: round(percentile(moved, 50) / 1000),
        warm_new_commit_p50_s: round(percentile(warmMoved, 50) / 1000),
        cold_over_snapshot: round(a.p50 / b.p50),
        cold_over_warm: round(a.p50 / c.p50),
        idle_sandbox_mib: round(idleMiB),
        runs: { cold: cold.length, snapshot: fromSnapshot.length, warm: warm.length },
      }),
    );
  } finally {
    await pool.drain();
    await driver.destroyAll();
    await driver.reconcile().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(fixture.path, { recursive: true, force: true });
  }
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

await main();
