/**
 * The node's dependency cache (server/src/sandbox/dep-cache.ts), measured on real snapshot builds
 * (runsc-egress, npm ci through the egress network) of three repositories with real, overlapping
 * npm dependencies (lockfiles made by the host's npm from the public registry). Every build is
 * cold (`rebuild`: the snapshot is built again from the base image). Per repository:
 *   no_cache  the dependency cache off: every tarball through the CONNECT proxy (today's path);
 *   empty     the cache on and empty: every tarball a miss through the host;
 *   warm      the cache holding only what the *other* two repositories' builds fetched (their
 *             empty-cache runs' entries), so the hits are the overlap, never the repository itself.
 * Times are the whole build and its install step (to the commit stage). An untimed build first
 * fetches the toolchains. Python is not measured: pypi.org does not resolve on this machine.
 * The last line of output is one JSON object.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execFileSync } from 'node:child_process';
import Docker from 'dockerode';
import { DependencyCache, type DependencyCacheStats } from '../server/src/sandbox/dep-cache';
import { createNpmRepo, lockfileTarballs } from '../server/src/sandbox/dep-cache.test-support';
import { RepoMirror } from '../server/src/sandbox/mirror';
import { SnapshotManager } from '../server/src/sandbox/snapshots';
import { ToolchainStore } from '../server/src/sandbox/toolchains';

const CA = '/etc/ssl/certs/ca-certificates.crt';
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

async function main(): Promise<void> {
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

  const noCache = new Map<string, Run>();
  const empty = new Map<string, Run>();
  const warm = new Map<string, Run>();
  const seeds = new Map<string, string>();
  for (const repo of repos) {
    noCache.set(repo.name, await build(repo.name, repo.sha, false));
    console.log(`${repo.name} no cache: ${JSON.stringify(noCache.get(repo.name))}`);
  }
  for (const repo of repos) {
    const cache = freshCache([]);
    empty.set(repo.name, await build(repo.name, repo.sha, cache));
    cache.close();
    const seed = join(work, `seed-${repo.name.replace('/', '-')}`);
    cpSync(cacheDir, seed, { recursive: true });
    seeds.set(repo.name, seed);
    console.log(`${repo.name} empty cache: ${JSON.stringify(empty.get(repo.name))}`);
  }
  for (const repo of repos) {
    const cache = freshCache(repos.filter((other) => other.name !== repo.name).map((other) => seeds.get(other.name) ?? ''));
    warm.set(repo.name, await build(repo.name, repo.sha, cache));
    cache.close();
    console.log(`${repo.name} warm from the others: ${JSON.stringify(warm.get(repo.name))}`);
  }

  const round = (value: number): number => Math.round(value * 100) / 100;
  const sum = (runs: Map<string, Run>, field: 'buildS' | 'installS'): number => [...runs.values()].reduce((total, run) => total + run[field], 0);
  const rows = repos.map((repo) => {
    const others = new Set(repos.filter((other) => other.name !== repo.name).flatMap((other) => other.tarballs));
    const n = noCache.get(repo.name);
    const e = empty.get(repo.name);
    const w = warm.get(repo.name);
    return {
      repo: repo.name,
      packages: repo.tarballs.length,
      shared_with_others: repo.tarballs.filter((path) => others.has(path)).length,
      no_cache_s: round(n?.buildS ?? NaN),
      empty_cache_s: round(e?.buildS ?? NaN),
      warm_cache_s: round(w?.buildS ?? NaN),
      install_no_cache_s: round(n?.installS ?? NaN),
      install_empty_s: round(e?.installS ?? NaN),
      install_warm_s: round(w?.installS ?? NaN),
      warm_hits: w?.stats?.hits ?? null,
      warm_misses: w?.stats?.misses ?? null,
      warm_mb_from_cache: round((w?.stats?.bytesFromCache ?? 0) / 1024 / 1024),
      warm_vs_empty: round((w?.buildS ?? NaN) / (e?.buildS ?? NaN)),
    };
  });
  console.log(
    JSON.stringify({
      bench: 'depcache',
      repos: rows,
      total_no_cache_s: round(sum(noCache, 'buildS')),
      total_empty_s: round(sum(empty, 'buildS')),
      total_warm_s: round(sum(warm, 'buildS')),
      warm_vs_empty: round(sum(warm, 'buildS') / sum(empty, 'buildS')),
      warm_vs_no_cache: round(sum(warm, 'buildS') / sum(noCache, 'buildS')),
      install_warm_vs_no_cache: round(sum(warm, 'installS') / sum(noCache, 'installS')),
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
