/**
 * The gVisor concurrency probe of `npm run bench:scale` (also on its own: `tsx bench/scale/gvisor.ts`):
 * how many tasks' sandboxes this machine sustains, each running a real test suite. Real Docker +
 * gVisor (runsc), the ts-lib fixture's snapshot (uvu + sucrase, 8 test files) — the same
 * `DockerSandboxDriver` and `SnapshotManager` a worker uses.
 *
 * The suite runs as a worker runs it: the feedback engine's full run, whose steps run directly with
 * npm's script environment. It ran `npm test` until session 8, whose npm CLI start under gVisor's
 * ptrace platform (the only one here: KVM hangs in this VM) cost more than the suite: 2.4 s a run
 * alone against 1.5 s, which put 20 sandboxes past the 2 cores. Until session 9 each full run
 * also took a whole `git diff` for the flaky judgment's workspace hash (five processes, ~0.45 s
 * under ptrace); the hash now comes from the changes already listed, and the probe went from 10
 * sandboxes to 20.
 *
 * A task's sandbox is mostly idle: it waits for the model, then runs a tool call. So each level N
 * starts N sandboxes at once (timed), then each runs the suite ROUNDS times with a pause of
 * THINK_MS (default 20 s, jittered ±50%: the design's ~15 model calls/s over ~310 sandboxes is a
 * turn per sandbox every ~21 s) between runs, while the others do the same; memory per sandbox is
 * sampled meanwhile (`docker stats`: usage minus page cache). Levels: GVISOR_LEVELS (5,10,20,…,60).
 *
 * A level is sustained when every start and test run succeeded, start p95 ≤ max(START_FACTOR ×
 * the lone sandbox's start, 10 s), test p95 ≤ TEST_FACTOR × the lone sandbox's test time, and the
 * host kept MIN_FREE_MIB available. The ramp stops at the first level that is not. The last line
 * is one JSON object; `runGvisorProbe` returns it for bench/scale.ts.
 */
import { readFileSync } from 'node:fs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { containerMemoryMiB } from '../container-memory';
import pino from 'pino';
import { SmartFeedbackEngine } from '../../server/src/feedback/engine';
import { DockerSandboxDriver } from '../../server/src/sandbox/docker-driver';
import { checkSandboxHost } from '../../server/src/sandbox/host-check';
import { RepoMirror } from '../../server/src/sandbox/mirror';
import { SnapshotManager } from '../../server/src/sandbox/snapshots';
import type { Sandbox } from '../../server/src/sandbox/types';
import { createFixtureRepo } from '../../test/support/fixture-repo';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const LEVELS = (process.env.GVISOR_LEVELS ?? '5,10,20,30,40,50,60').split(',').map(Number);
const ROUNDS = env('GVISOR_ROUNDS', 2);
/** The design's pace: ~15 model calls/s across ~310 sandboxes is one turn per sandbox every ~21 s. */
const THINK_MS = env('GVISOR_THINK_MS', 20_000);
const START_FACTOR = env('GVISOR_START_FACTOR', 4);
const TEST_FACTOR = env('GVISOR_TEST_FACTOR', 4);
const MIN_FREE_MIB = env('GVISOR_MIN_FREE_MIB', 2048);

export interface GvisorProbe {
  max_concurrent_gvisor_tasks: number;
  gvisor_mib_per_sandbox: number;
  gvisor_levels: Array<{ n: number; ok: boolean; start_p95_ms: number; test_p50_ms: number; test_p95_ms: number; mib_per_sandbox: number; free_mib: number; why?: string }>;
  gvisor_bound: string;
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? 0;
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function availableMiB(): number {
  const line = readFileSync('/proc/meminfo', 'utf8').split('\n').find((l) => l.startsWith('MemAvailable:'));
  return Math.round(Number(line?.split(/\s+/)[1] ?? 0) / 1024);
}

export async function runGvisorProbe(out: (line: string) => void = (line) => process.stdout.write(`${line}\n`)): Promise<GvisorProbe> {
  const docker = new Docker();
  const host = await checkSandboxHost(docker);
  if (host.runtime !== 'runsc') throw new Error(`the gVisor probe needs runsc; this host's sandbox runtime is ${host.runtime}`);
  const ownerId = `bench-gvisor-${process.pid}`;
  const dataDir = mkdtempSync(join(tmpdir(), 'dockhand-bench-gvisor-'));
  const fixture = createFixtureRepo('ts-lib');
  const logger = pino({ level: 'warn' }, pino.destination(2));
  const driver = new DockerSandboxDriver({ docker, ownerId, runtime: host.runtime, logger });
  const mirror = new RepoMirror(dataDir);
  const snapshots = new SnapshotManager({ docker, mirror, dataDir, ownerId, egress: host.egressRuntime ? 'proxy' : 'runc-bridge', extraCaBundle: '/etc/ssl/certs/ca-certificates.crt' });
  const bound = `start p95 <= max(${START_FACTOR}x lone, 10 s), test p95 <= ${TEST_FACTOR}x lone, >= ${MIN_FREE_MIB} MiB available, no failure; ${ROUNDS} suite runs per sandbox, ${THINK_MS} ms model think time between`;
  try {
    const mirrorPath = await mirror.ensure(fixture.path, fixture.sha);
    const snapshot = await snapshots.resolve({ repo: fixture.path, mirrorPath, sha: fixture.sha });
    // The suite as a worker runs it: the feedback engine's full run (the test script's steps run
    // directly with npm's script environment, no npm process; the runner's own reporter read back).
    const feedback = new SmartFeedbackEngine({ repo: 'ts-lib' });
    const runSuite = async (sandbox: Sandbox): Promise<number> => {
      const started = performance.now();
      const report = await feedback.runTests(sandbox, { scope: 'full' });
      if (!report.ok || report.passed === 0) throw new Error(`${report.command}: ${report.passed} passed, ${report.failed} failed: ${report.output.slice(-300)}`);
      return performance.now() - started;
    };
    const level = async (n: number) => {
      const live: Sandbox[] = [];
      const starts: number[] = [];
      const tests: number[] = [];
      const memory: number[] = [];
      let lowest = availableMiB();
      let failure: string | undefined;
      try {
        await Promise.all(Array.from({ length: n }, async () => {
          const started = performance.now();
          const sandbox = await driver.create({ image: snapshot.image, baseSha: fixture.sha, snapshot: snapshot.identity });
          starts.push(performance.now() - started);
          live.push(sandbox);
        }));
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            lowest = Math.min(lowest, availableMiB());
            const figures = await Promise.all(live.map((s) => containerMemoryMiB(docker, s.id).catch(() => Number.NaN)));
            const valid = figures.filter(Number.isFinite);
            if (valid.length > 0) memory.push(valid.reduce((a, b) => a + b, 0) / valid.length);
            await sleep(1000);
          }
        })();
        await Promise.all(live.map(async (sandbox, i) => {
          await sleep((i / n) * THINK_MS); // staggered, as tasks' turns are
          for (let round = 0; round < ROUNDS; round++) {
            tests.push(await runSuite(sandbox));
            if (round < ROUNDS - 1) await sleep(THINK_MS * (0.5 + Math.random()));
          }
        }));
        sampling = false;
        await sampler;
      } catch (error) {
        failure = error instanceof Error ? error.message.slice(0, 300) : String(error);
      } finally {
        await Promise.allSettled(live.map((s) => s.destroy()));
      }
      return { starts, tests, memory, lowest, failure };
    };

    const lone = await level(1);
    if (lone.failure) throw new Error(`a lone gVisor sandbox failed: ${lone.failure}`);
    const loneStart = percentile(lone.starts, 50);
    const loneTest = percentile(lone.tests, 50);
    out(`gVisor probe: lone sandbox starts in ${Math.round(loneStart)} ms, runs the ts-lib suite in ${Math.round(loneTest)} ms; bound: ${bound}`);
    const levels: GvisorProbe['gvisor_levels'] = [];
    let sustained = 1;
    let mibAtSustained = percentile(lone.memory, 50);
    for (const n of LEVELS) {
      const result = await level(n);
      const row = {
        n,
        ok: false,
        start_p95_ms: Math.round(percentile(result.starts, 95)),
        test_p50_ms: Math.round(percentile(result.tests, 50)),
        test_p95_ms: Math.round(percentile(result.tests, 95)),
        mib_per_sandbox: Math.round(percentile(result.memory, 50) * 10) / 10,
        free_mib: result.lowest,
      };
      const why = result.failure
        ?? (row.start_p95_ms > Math.max(START_FACTOR * loneStart, 10_000) ? `start p95 ${row.start_p95_ms} ms` : undefined)
        ?? (row.test_p95_ms > TEST_FACTOR * loneTest ? `test p95 ${row.test_p95_ms} ms > ${TEST_FACTOR} x ${Math.round(loneTest)} ms` : undefined)
        ?? (result.lowest < MIN_FREE_MIB ? `${result.lowest} MiB available` : undefined);
      row.ok = why === undefined;
      levels.push(why ? { ...row, why } : row);
      out(`  ${n} sandboxes: start p95 ${row.start_p95_ms} ms, test p50 ${row.test_p50_ms} ms p95 ${row.test_p95_ms} ms, ${row.mib_per_sandbox} MiB each, ${row.free_mib} MiB available${why ? ` — past the bound: ${why}` : ''}`);
      if (why) break;
      sustained = n;
      mibAtSustained = row.mib_per_sandbox;
    }
    return { max_concurrent_gvisor_tasks: sustained, gvisor_mib_per_sandbox: Math.round(mibAtSustained * 10) / 10, gvisor_levels: levels, gvisor_bound: bound };
  } finally {
    await driver.destroyAll().catch(() => undefined);
    await driver.reconcile().catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(fixture.path, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runGvisorProbe();
  process.stdout.write(`${JSON.stringify({ bench: 'scale-gvisor', ...result })}\n`);
  process.exit(0);
}
