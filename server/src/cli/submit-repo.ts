import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { basename, isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { RepoListResponse, RepoName, RepoRegistration } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import type { ApiClient } from './client';

/*
 * What `submit --repo` means, as a user expects it:
 *   --repo NAME        a registered repository (base: --base, else HEAD of the current checkout)
 *   --repo /some/path  a local git repository: the registration whose source is that path, its
 *                      origin, or its local-forge copy; none yet and the caller is an admin: it
 *                      is registered (name = the directory's name), which copies its branches
 *                      to the forge; otherwise the exact command an admin runs. HEAD must be on a
 *                      branch, so the server can fetch it from the registered source.
 *   (none)             the current directory, as a path.
 */

export interface SubmitTarget {
  repo: string;
  baseSha: string;
  branch?: string;
  dirty: boolean;
  /** A line to print (registered it, …). */
  notes: string[];
}

function git(cwd: string, ...args: string[]): string | undefined {
  try {
    return execFileSync('git', ['-C', cwd, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return undefined;
  }
}

function real(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

const same = (a: string | undefined, b: string | undefined) =>
  a !== undefined && b !== undefined && real(a).replace(/\/+$/, '') === real(b).replace(/\/+$/, '');

export async function resolveSubmitTarget(api: ApiClient, options: { repo?: string; base?: string }, cwd: string): Promise<SubmitTarget> {
  const value = options.repo ?? cwd;
  const asPath = isAbsolute(value) || value.startsWith('.') || (options.repo === undefined) ? resolve(cwd, value) : undefined;
  if (asPath === undefined || !existsSync(asPath)) {
    if (asPath !== undefined) throw new DockhandError('bad_request', `--repo: ${asPath} does not exist`, { field: '--repo', hint: 'pass the path of a git repository, or a registered name (dockhand repo list)' });
    if (!RepoName.safeParse(value).success) {
      throw new DockhandError('bad_request', `--repo: "${value}" is neither a path nor a registered repository name`, { field: '--repo', hint: 'dockhand repo list shows the names you may use' });
    }
    const baseSha = options.base ?? git(cwd, 'rev-parse', 'HEAD');
    if (!baseSha) throw new DockhandError('bad_request', '--base: pass the commit to start from (a full SHA); the current directory is not a git checkout', { field: '--base' });
    const branch = git(cwd, 'symbolic-ref', '--short', 'HEAD');
    return { repo: value, baseSha, ...(branch ? { branch } : {}), dirty: (git(cwd, 'status', '--porcelain') ?? '') !== '', notes: [] };
  }
  const root = git(asPath, 'rev-parse', '--show-toplevel') ?? (git(asPath, 'rev-parse', '--is-bare-repository') === 'true' ? asPath : undefined);
  if (!root) throw new DockhandError('bad_request', `--repo: ${asPath} is not a git repository`, { field: '--repo', hint: 'run `git init` and commit, or pass a registered name' });
  const baseSha = options.base ?? git(root, 'rev-parse', 'HEAD');
  if (!baseSha || !/^[0-9a-f]{40}$/.test(baseSha)) throw new DockhandError('bad_request', `--base: ${root} has no commit yet`, { field: '--base', hint: 'commit something first' });
  const branch = git(root, 'symbolic-ref', '--short', 'HEAD');
  if (!options.base && !git(root, 'branch', '--contains', baseSha)) {
    throw new DockhandError('bad_request', `--repo: HEAD of ${root} is not on any branch, so the server cannot fetch it`, { field: '--repo', hint: 'switch to a branch (git switch -c my-branch) and submit again' });
  }
  const origin = git(root, 'remote', 'get-url', 'origin');
  const { repos } = await api.request('GET', '/v1/repos', RepoListResponse);
  const notes: string[] = [];
  let registration = repos.find((r) => same(r.source, root) || same(r.mirrorSource, root))
    ?? repos.find((r) => origin !== undefined && (r.source === origin || same(r.source, origin) || same(r.mirrorSource, origin)));
  if (!registration) {
    const me = await api.request('GET', '/v1/me', z.object({ name: z.string(), role: z.enum(['user', 'admin']) }));
    const name = basename(root).replace(/\.git$/, '').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[^A-Za-z0-9]+/, '') || 'repo';
    if (me.role !== 'admin') {
      throw new DockhandError('not_found', `--repo: ${root} is not a registered repository`, {
        field: '--repo',
        hint: `ask an admin to run: dockhand repo add ${name} --from ${root}   (then: dockhand submit --repo ${name} …)`,
      });
    }
    const taken = repos.find((r) => r.name === name);
    if (taken) {
      throw new DockhandError('conflict', `--repo: the name ${name} is taken by ${taken.source}`, { field: '--repo', hint: `register this one under another name: dockhand repo add ${name}-2 --from ${root}` });
    }
    registration = await api.request('POST', '/v1/repos', RepoRegistration, { name, source: root });
    notes.push(`registered ${registration.name} from ${root} (default branch ${registration.defaultBranch})`);
  }
  return { repo: registration.name, baseSha, ...(branch ? { branch } : {}), dirty: (git(root, 'status', '--porcelain') ?? '') !== '', notes };
}

/** Server fields of a task body → the CLI option that sets them. */
export const OPTION_OF_FIELD: Record<string, string> = {
  'context.repo': '--repo',
  'context.baseSha': '--base',
  'context.branch': '--repo',
  'ticket.title': '--title',
  'ticket.body': '--body',
  'ticket.id': '--issue',
  priority: '--priority',
  reproducingTests: '--test',
};
