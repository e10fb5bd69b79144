import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createRepoFromFiles } from './test-support';

/**
 * A repository with real npm dependencies and a real package-lock.json (made by the host's npm
 * against the public registry, `--package-lock-only`: nothing is installed on the host), for the
 * dependency cache's tests and bench.
 */
export function createNpmRepo(name: string, dependencies: Record<string, string>, extra: Record<string, string> = {}): { path: string; sha: string } {
  const manifest = { name, version: '1.0.0', private: true, dependencies, scripts: { test: 'node -e "process.exit(0)"' } };
  const repo = createRepoFromFiles({ 'package.json': `${JSON.stringify(manifest, null, 2)}\n`, ...extra });
  try {
    execFileSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund', '--omit-lockfile-registry-resolved=false', '--registry', 'https://registry.npmjs.org/'], { cwd: repo.path, stdio: ['ignore', 'ignore', 'inherit'] });
    const sha = repo.commit({ 'package-lock.json': readFileSync(`${repo.path}/package-lock.json`, 'utf8') }, 'lockfile');
    return { path: repo.path, sha };
  } catch (error) {
    rmSync(repo.path, { recursive: true, force: true });
    throw error;
  }
}

/** The registry tarball paths (`/name/-/name-1.2.3.tgz`) a package-lock.json names. */
export function lockfileTarballs(lockfile: string): string[] {
  const parsed: unknown = JSON.parse(lockfile);
  const packages = typeof parsed === 'object' && parsed !== null && 'packages' in parsed && typeof parsed.packages === 'object' && parsed.packages !== null ? parsed.packages : {};
  const paths = new Set<string>();
  for (const [key, entry] of Object.entries(packages)) {
    if (!key.includes('node_modules/') || typeof entry !== 'object' || entry === null) continue;
    if ('resolved' in entry && typeof entry.resolved === 'string') {
      const url = new URL(entry.resolved);
      if (url.hostname === 'registry.npmjs.org') paths.add(url.pathname);
      continue;
    }
    if (!('version' in entry) || typeof entry.version !== 'string' || ('link' in entry && entry.link)) continue;
    const name = key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
    paths.add(`/${name}/-/${name.split('/').pop() ?? name}-${entry.version}.tgz`);
  }
  return [...paths].sort();
}
