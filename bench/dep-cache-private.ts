/**
 * The private-registry row of `npm run bench:depcache` (issue 25): a cold `npm ci` of one project
 * that depends on `@acme/private-utils` (Verdaccio with htpasswd auth, `.ci/needs/verdaccio.sh`)
 * and on public packages, in alternating rounds on this host:
 *   direct  npm holds the token (a developer's `.npmrc`: the scope at Verdaccio, `_authToken`) and
 *           fetches the public packages from registry.npmjs.org itself;
 *   front   npm holds nothing and asks the server's registry front (a `DependencyCache` listener
 *           with the repository's registry; its cache emptied each round, so every public tarball
 *           is a miss through the host), which adds the token upstream.
 * Each round starts from an empty npm cache and no node_modules. Measured on the host because a
 * snapshot build cannot reach the registry directly by design (the build network reaches only the
 * front and the proxy), so the install is the part both paths share; gVisor's time to write
 * node_modules is the same either way.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DependencyCache } from '../server/src/sandbox/dep-cache';
import { PRIVATE_PACKAGE, testRegistry } from '../server/src/sandbox/private-registry.test-support';

const run = promisify(execFile);

export interface PrivateRegistryRow {
  packages: number;
  rounds: number;
  direct_s: number;
  front_s: number;
  front_vs_direct: number;
  front_requests_with_secret: number;
}

const DEPENDENCIES = { [PRIVATE_PACKAGE]: '1.0.0', lodash: '4.17.21', chalk: '4.1.2', commander: '12.1.0', typescript: '5.6.3', axios: '1.7.9', yargs: '17.7.2' };

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[middle] ?? NaN) : ((sorted[middle - 1] ?? NaN) + (sorted[middle] ?? NaN)) / 2;
}

export async function privateRegistryRow(rounds: number, caBundle: string, log: (line: string) => void): Promise<PrivateRegistryRow> {
  const registry = await testRegistry();
  const work = mkdtempSync(join(tmpdir(), 'dockhand-bench-private-'));
  try {
    const project = join(work, 'project');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'bench-private', version: '1.0.0', private: true, dependencies: DEPENDENCIES }, null, 2));
    const developerRc = join(work, 'developer.npmrc');
    writeFileSync(developerRc, `@acme:registry=${registry.url}\n//${new URL(registry.url).host}/:_authToken=${registry.token}\n`, { mode: 0o600 });
    const emptyRc = join(work, 'empty.npmrc');
    writeFileSync(emptyRc, '');
    const base = { PATH: process.env.PATH ?? '', HOME: work, NODE_EXTRA_CA_CERTS: caBundle, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
    await run('npm', ['install', '--package-lock-only', '--ignore-scripts'], { cwd: project, env: { ...base, npm_config_userconfig: developerRc } });
    const { stdout } = await run('node', ['-e', 'process.stdout.write(String(Object.keys(require("./package-lock.json").packages).filter((key) => key.includes("node_modules/")).length))'], { cwd: project });
    const packages = Number(stdout);

    const cold = async (env: Record<string, string>): Promise<number> => {
      rmSync(join(project, 'node_modules'), { recursive: true, force: true });
      const cache = join(work, 'npm-cache');
      rmSync(cache, { recursive: true, force: true });
      const started = Date.now();
      await run('npm', ['ci', '--ignore-scripts'], { cwd: project, env: { ...base, npm_config_cache: cache, ...env }, timeout: 600_000 });
      const seconds = (Date.now() - started) / 1000;
      await run('node', ['-e', `if (require('${PRIVATE_PACKAGE}').shout('a') !== 'A!') process.exit(1)`], { cwd: project });
      return seconds;
    };
    const direct: number[] = [];
    const front: number[] = [];
    let requests = 0;
    for (let round = 0; round < rounds; round += 1) {
      // Alternate which goes first: the load of a shared host drifts within a round.
      const order = round % 2 === 0 ? ['direct', 'front'] : ['front', 'direct'];
      for (const mode of order) {
        if (mode === 'direct') {
          direct.push(await cold({ npm_config_userconfig: developerRc }));
          log(`private direct: ${direct.at(-1)?.toFixed(2)} s`);
          continue;
        }
        const cacheDir = join(work, 'dep-cache');
        rmSync(cacheDir, { recursive: true, force: true });
        const cache = new DependencyCache({ dir: cacheDir, caBundle });
        const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1', registries: [{ scope: '@acme', url: new URL(registry.url), authorization: `Bearer ${registry.token}`, secret: 'NPM_ACME' }] });
        try {
          front.push(await cold({ npm_config_userconfig: emptyRc, npm_config_registry: listener.url, npm_config_replace_registry_host: 'always' }));
          requests = listener.secretUses.get('NPM_ACME') ?? 0;
          log(`private front: ${front.at(-1)?.toFixed(2)} s (${listener.stats.misses} public misses, ${requests} requests with NPM_ACME)`);
        } finally {
          await listener.close();
          await cache.close();
        }
      }
    }
    const round2 = (value: number): number => Math.round(value * 100) / 100;
    return { packages, rounds, direct_s: round2(median(direct)), front_s: round2(median(front)), front_vs_direct: round2(median(front) / median(direct)), front_requests_with_secret: requests };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
