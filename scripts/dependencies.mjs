import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The packages the lockfile lists that node_modules does not hold (npm's own record of what it
 * installed, node_modules/.package-lock.json): a checkout whose dependencies changed since its
 * last `npm ci` otherwise fails later with ERR_MODULE_NOT_FOUND from the server bundle.
 */
export function missingDependencies(rootDir) {
  const read = (path) => JSON.parse(readFileSync(path, 'utf8')).packages ?? {};
  const installedPath = join(rootDir, 'node_modules', '.package-lock.json');
  if (!existsSync(installedPath)) return ['(node_modules was never installed)'];
  const wanted = read(join(rootDir, 'package-lock.json'));
  const installed = read(installedPath);
  return Object.entries(wanted)
    .filter(([path, entry]) => path.startsWith('node_modules/') && !entry.optional && !entry.dev && !entry.link && !installed[path])
    .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
}
