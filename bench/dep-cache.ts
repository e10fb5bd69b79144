/**
 * The node's dependency cache (server/src/sandbox/dep-cache.ts), measured on real snapshot builds
 * (runsc-egress, npm ci through the egress network) of three repositories with real, overlapping
 * npm dependencies (lockfiles made by the host's npm from the public registry). Every build is
 * cold (`rebuild`: the snapshot is built again from the base image). Per repository:
 *   no_cache  the dependency cache off: every tarball through the CONNECT proxy (today's path);
 *   empty     the cache on and empty: every tarball a miss through the host;
 *   warm      the cache holding only what the *other* two repositories' builds fetched (their
 *             empty-cache runs' entries), so the hits are the overlap, never the repository itself.
 * Times are the whole build and its install step (to the commit stage), medians of two rounds
 * (BENCH_DEPCACHE_ROUNDS=1 for one). An untimed build first
 * fetches the toolchains. Python is not measured: pypi.org does not resolve on this machine.
 * Then the private-registry row (`dep-cache-private.ts`): a cold install through the
 * authenticating front against direct access with the token, alternating, medians of five rounds
 * (BENCH_DEPCACHE_ONLY=private runs that row alone).
 * The last line of output is one JSON object.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execFileSync } from 'node:child_process';
import Docker from 'dockerode';
import { DependencyCache, type DependencyCacheStats } from '../server/src/sandbox/dep-cache';
import { createNpmRepo, lockfileTarballs } from '../server/src/sandbox/dep-cache.test-support';
import { privateRegistryRow } from './dep-cache-private';
import { RepoMirror } from '../server/src/sandbox/mirror';
import { SnapshotManager } from '../server/src/sandbox/snapshots';
import { ToolchainStore } from '../server/src/sandbox/toolchains';

const CA = '/etc/ssl/certs/ca-certificates.crt';
const ROUNDS = Math.min(2, Math.max(1, Number(process.env.BENCH_DEPCACHE_ROUNDS ?? 2)));
const REPOS: Record<string, Record<string, string>> = {
  'bench/api': { express: '4.21.2', lodash: '4.17.21', axios: '1.7.9', typescript: '5.6.3', dotenv: '16.4.5' },
  'bench/cli': { lodash: '4.17.21', chalk: '4.1.2', commander: '12.1.0', typescript: '5.6.3', axios: '1.7.9', yargs: '17.7.2' },
  'bench/web': { express: '4.21.2', 'body-parser': '1.20.3', chalk: '4.1.2', yargs: '17.7.2', 'date-fns': '4.1.0', uuid: '11.0.3' },
};

interface Run {
  buildS: number;
  installS: number;
  stats: DependencyCacheStats | undefined;
}

const docker = new Docker();
const ownerId = `bench-depcache-${process.pid}`;
const repository = `dockhand/bench-depcache-${process.pid}`;
const work = mkdtempSync(join(tmpdir(), 'dockhand-bench-depcache-'));
const dataDir = join(work, 'data');
const cacheDir = join(dataDir, 'dep-cache');
const sources = new Map<string, string>();
const mirror = new RepoMirror(dataDir, { sources: (name) => sources.get(name) ?? name });
const toolchains = new ToolchainStore({ dataDir: join(tmpdir(), 'dockhand-bench-toolchains'), caBundle: CA });

async function build(name: string, sha: string, cache: DependencyCache | false): Promise<Run> {
  const snapshots = new SnapshotManager({ docker, mirror, dataDir, ownerId, repository, egress: 'proxy', extraCaBundle: CA, toolchains, dependencyCache: cache });
  const started = Date.now();
  let installEnd = 0;
  const snapshot = await snapshots.resolve({
    repo: name,
    mirrorPath: await mirror.ensure(name, sha),
    sha,
    rebuild: true,
    onProgress: (progress) => {
      if (progress.stage === 'commit' && installEnd === 0) installEnd = Date.now();
    },
  });
  const buildS = (Date.now() - started) / 1000;
  await docker.getImage(snapshot.image).remove({ force: true }).catch(() => undefined);
  // The log's own count (the build's listener), which the test suite checks against the lockfiles.
  const log = readFileSync(join(dataDir, 'snapshot-logs', `${snapshot.key}.log`), 'utf8');
  const line = /# dependency cache: (\d+) hits \(([\d.]+) MB[^,]*, (\d+) misses \(([\d.]+) MB/.exec(log);
  const stats = line ? { hits: Number(line[1]), misses: Number(line[3]), corrupt: 0, passedThrough: 0, refused: 0, bytesFromCache: Number(line[2]) * 1024 * 1024, bytesFromUpstream: Number(line[4]) * 1024 * 1024, evictions: 0 } : undefined;
  return { buildS, installS: (installEnd - started) / 1000, stats };
}

function freshCache(seedDirs: string[]): DependencyCache {
  rmSync(cacheDir, { recursive: true, force: true });
  for (const seed of seedDirs) cpSync(seed, cacheDir, { recursive: true, force: false, errorOnExist: false });
  return new DependencyCache({ dir: cacheDir, caBundle: CA });
}

const PRIVATE_ROUNDS = 5;

async function main(): Promise<void> {
  if (process.env.BENCH_DEPCACHE_ONLY === 'private') {
    const row = await privateRegistryRow(PRIVATE_ROUNDS, CA, (line) => console.log(line));
    console.log(JSON.stringify({ bench: 'depcache', private_registry: row, load_at_end: Math.round((loadavg()[0] ?? NaN) * 100) / 100 }));
    return;
  }
  execFileSync('bash', [resolve(import.meta.dirname, '../sandbox-images/base/build.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
  const repos = Object.entries(REPOS).map(([name, dependencies]) => {
    const repo = createNpmRepo(name.replace('/', '-'), dependencies);
    sources.set(name, repo.path);
    return { name, sha: repo.sha, path: repo.path, tarballs: lockfileTarballs(readFileSync(join(repo.path, 'package-lock.json'), 'utf8')) };
  });
  const first = repos[0];
  if (!first) throw new Error('no repositories');
  console.log(`warm-up (toolchains, base image; untimed): ${first.name}`);
  await build(first.name, first.sha, false);

  const runs = { no_cache: new Map<string, Run[]>(), empty: new Map<string, Run[]>(), warm: new Map<string, Run[]>() };
  const seeds = new Map<string, string>();
  const record = (mode: keyof typeof runs, name: string, run: Run): void => {
    runs[mode].set(name, [...(runs[mode].get(name) ?? []), run]);
    console.log(`${name} ${mode}: build ${run.buildS.toFixed(1)} s, install ${run.installS.toFixed(1)} s${run.stats ? `, ${run.stats.hits} hits, ${run.stats.misses} misses` : ''}; load ${loadavg()[0]?.toFixed(1)}`);
  };
  const phases: Record<keyof typeof runs, (repo: (typeof repos)[number]) => Promise<void>> = {
    no_cache: async (repo) => record('no_cache', repo.name, await build(repo.name, repo.sha, false)),
    empty: async (repo) => {
      const cache = freshCache([]);
      record('empty', repo.name, await build(repo.name, repo.sha, cache));
      await cache.close();
      const seed = join(work, `seed-${repo.name.replace('/', '-')}`);
      rmSync(seed, { recursive: true, force: true });
      cpSync(cacheDir, seed, { recursive: true });
      seeds.set(repo.name, seed);
    },
    warm: async (repo) => {
      const cache = freshCache(repos.filter((other) => other.name !== repo.name).map((other) => seeds.get(other.name) ?? ''));
      record('warm', repo.name, await build(repo.name, repo.sha, cache));
      await cache.close();
    },
  };
  // Other work on this 2-core host drifts the load during a run: the second round runs the modes
  // in the opposite order (warm first, from the first round's seeds), and the figures are medians.
  const orders: Array<Array<keyof typeof runs>> = [['no_cache', 'empty', 'warm'], ['warm', 'empty', 'no_cache']];
  for (const order of orders.slice(0, ROUNDS)) for (const mode of order) for (const repo of repos) await phases[mode](repo);

  const median = (values: number[]): number => {
    const sorted = [...values].sort((a, b) => a - b);
    const middle = Math.floor(sorted.length / 2);
    return sorted.length % 2 ? (sorted[middle] ?? NaN) : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
  };
  const of = (mode: keyof typeof runs, name: string, field: 'buildS' | 'installS'): number => median((runs[mode].get(name) ?? []).map((run) => run[field]));
  const round = (value: number): number => Math.round(value * 100) / 100;
  const total = (mode: keyof typeof runs, field: 'buildS' | 'installS'): number => repos.reduce((sum, repo) => sum + of(mode, repo.name, field), 0);
  const rows = repos.map((repo) => {
    const others = new Set(repos.filter((other) => other.name !== repo.name).flatMap((other) => other.tarballs));
    const warmStats = runs.warm.get(repo.name)?.[0]?.stats;
    return {
      repo: repo.name,
      packages: repo.tarballs.length,
      shared_with_others: repo.tarballs.filter((path) => others.has(path)).length,
      no_cache_s: round(of('no_cache', repo.name, 'buildS')),
      empty_cache_s: round(of('empty', repo.name, 'buildS')),
      warm_cache_s: round(of('warm', repo.name, 'buildS')),
      install_no_cache_s: round(of('no_cache', repo.name, 'installS')),
      install_empty_s: round(of('empty', repo.name, 'installS')),
      install_warm_s: round(of('warm', repo.name, 'installS')),
      warm_hits: warmStats?.hits ?? null,
      warm_misses: warmStats?.misses ?? null,
      warm_mb_from_cache: round((warmStats?.bytesFromCache ?? 0) / 1024 / 1024),
      warm_vs_empty: round(of('warm', repo.name, 'buildS') / of('empty', repo.name, 'buildS')),
      warm_vs_no_cache: round(of('warm', repo.name, 'buildS') / of('no_cache', repo.name, 'buildS')),
    };
  });
  const privateRegistry = await privateRegistryRow(PRIVATE_ROUNDS, CA, (line) => console.log(line));
  console.log(
    JSON.stringify({
      bench: 'depcache',
      private_registry: privateRegistry,
      rounds: ROUNDS,
      repos: rows,
      total_no_cache_s: round(total('no_cache', 'buildS')),
      total_empty_s: round(total('empty', 'buildS')),
      total_warm_s: round(total('warm', 'buildS')),
      warm_vs_empty: round(total('warm', 'buildS') / total('empty', 'buildS')),
      warm_vs_no_cache: round(total('warm', 'buildS') / total('no_cache', 'buildS')),
      install_warm_vs_no_cache: round(total('warm', 'installS') / total('no_cache', 'installS')),
      load_at_end: round(loadavg()[0] ?? NaN),
      python: 'not measured: pypi.org does not resolve on this machine (and pip is not served by the cache)',
    }),
  );
}

main()
  .catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(async () => {
    for (const image of await docker.listImages({ filters: { reference: [repository] } })) await docker.getImage(image.Id).remove({ force: true }).catch(() => undefined);
    for (const path of [work, ...sources.values()]) rmSync(path, { recursive: true, force: true });
  });
