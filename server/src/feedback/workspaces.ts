import { posix } from 'node:path';
import picomatch from 'picomatch';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/*
 * Which directories are a repository's workspace packages: the root package.json's `workspaces`
 * (npm, yarn classic and berry: an array, or `{ packages: [...] }`) or pnpm-workspace.yaml's
 * `packages`, matched against the repository's files (a member is a directory with a
 * package.json). `!glob` entries exclude, as the package managers do.
 */

const RootWorkspaces = z.object({ workspaces: z.union([z.array(z.string()), z.object({ packages: z.array(z.string()).optional() })]).optional() });
const PnpmWorkspace = z.object({ packages: z.array(z.string()).optional() }).nullable();

/** At most this many members are planned (each is one runner process per run). */
export const MAX_WORKSPACE_MEMBERS = 100;

export function workspaceGlobs(packageJson: string | undefined, pnpmWorkspaceYaml: string | undefined): string[] {
  const globs: string[] = [];
  if (packageJson !== undefined) {
    try {
      const parsed = RootWorkspaces.safeParse(JSON.parse(packageJson));
      const workspaces = parsed.success ? parsed.data.workspaces : undefined;
      if (Array.isArray(workspaces)) globs.push(...workspaces);
      else if (workspaces?.packages) globs.push(...workspaces.packages);
    } catch {
      // Not JSON: no workspaces.
    }
  }
  if (pnpmWorkspaceYaml !== undefined) {
    try {
      const parsed = PnpmWorkspace.safeParse(parseYaml(pnpmWorkspaceYaml));
      if (parsed.success && parsed.data?.packages) globs.push(...parsed.data.packages);
    } catch {
      // Not YAML: no workspaces.
    }
  }
  return globs.map((glob) => glob.trim().replace(/^\.\//, '').replace(/\/+$/, '')).filter((glob) => glob !== '' && glob !== '.');
}

/** Member directories, sorted, that the globs name among `files` (directories holding a package.json). */
export function workspaceDirs(globs: readonly string[], files: Iterable<string>): string[] {
  const include = globs.filter((glob) => !glob.startsWith('!'));
  const exclude = globs.filter((glob) => glob.startsWith('!')).map((glob) => glob.slice(1));
  if (include.length === 0) return [];
  const included = picomatch(include, { dot: false });
  const excluded = exclude.length > 0 ? picomatch(exclude) : () => false;
  const dirs = new Set<string>();
  for (const file of files) {
    if (posix.basename(file) !== 'package.json' || file === 'package.json') continue;
    const dir = posix.dirname(file);
    if (dir.split('/').includes('node_modules')) continue;
    if (included(dir) && !excluded(dir)) dirs.add(dir);
  }
  return [...dirs].sort().slice(0, MAX_WORKSPACE_MEMBERS);
}
