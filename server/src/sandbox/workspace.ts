import { DockhandError } from '../errors';
import type { DockerSandbox } from './docker-sandbox';

/**
 * The `origin` a CI checkout has: a remote of that name (a URL the sandbox never fetches from) and
 * `refs/remotes/origin/<default branch>` with `origin/HEAD` pointing at it. A CI step that names
 * the default branch (`pnpm --filter "...[origin/master]" test`, `nx affected --base=origin/main`,
 * `git diff origin/main`) then selects what it selects on CI: the packages the task's change
 * touches, against its base commit. remark-validate-links wants the `origin` remote itself.
 */
export interface WorkspaceOrigin {
  /** The repository's default branch (its mirror's HEAD). */
  branch: string;
  /** The remote's URL: never reachable from a sandbox (`dockhand-local://<repository>`). */
  url: string;
}

/** A branch name git accepts and a shell argument cannot turn into anything else. */
const BRANCH = /^(?!.*\.\.)(?!.*\/\/)[A-Za-z0-9._][A-Za-z0-9._/-]{0,254}$/;

/** The origin of repository `repo` whose default branch is `branch`, or undefined when the name is not one git takes. */
export function workspaceOrigin(repo: string, branch: string | undefined): WorkspaceOrigin | undefined {
  const name = branch?.trim().replace(/^refs\/heads\//, '');
  if (!name || !BRANCH.test(name) || name.endsWith('/') || name.endsWith('.lock')) return undefined;
  return { branch: name, url: `dockhand-local://${encodeURI(repo)}` };
}

/**
 * Shell after the checkout ($1 the commit, $2 the branch, $3 the URL; $2 empty: keep what the
 * snapshot has): the workspace's origin branches are at the commit the workspace is at, which
 * is the task's base (a PR follow-up's too: the PR's base), as a CI checkout of a change has them.
 */
const ORIGIN_SCRIPT =
  'if [ -n "$2" ]; then ' +
  'if git remote get-url origin >/dev/null 2>&1; then git remote set-url origin "$3"; else git remote add origin "$3"; fi; ' +
  'git update-ref "refs/remotes/origin/$2" "$1"; git symbolic-ref refs/remotes/origin/HEAD "refs/remotes/origin/$2"; fi; ' +
  'git for-each-ref --format="%(refname)" refs/remotes/origin/ | while read -r ref; do [ "$ref" = refs/remotes/origin/HEAD ] || git update-ref "$ref" "$1"; done';

/**
 * Moves a sandbox's workspace to `baseSha` without network: the bundle (made from the server's
 * mirror) is streamed in over exec stdin, fetched from, and checked out; `origin` (the snapshot
 * build's) sets up the remote, and the origin branches the workspace has move to `baseSha`. Ends
 * by verifying HEAD and a clean tree; anything else fails loudly rather than handing out a
 * workspace at the wrong commit.
 */
export async function checkoutFromBundle(sandbox: DockerSandbox, baseSha: string, bundle: Buffer, origin?: WorkspaceOrigin): Promise<void> {
  const path = `/tmp/.dockhand-${baseSha.slice(0, 12)}.bundle`;
  const script =
    'set -e; cat > "$0"; ' +
    'git fetch -q --no-tags "$0" "+refs/dockhand/*:refs/dockhand/*"; rm -f "$0"; ' +
    // A snapshot whose install changed the workspace (install-made.ts) keeps those changes where
    // the commit allows: its files are carried over, tracked ones reset where the commit differs.
    'if [ -e .git/dockhand-install-made ]; then git checkout -q --detach "$1" 2>/dev/null || git checkout -q -f --detach "$1"; ' +
    'else git checkout -q --detach "$1"; git clean -fdq; fi; ' +
    ORIGIN_SCRIPT;
  const result = await sandbox.raw(['sh', '-c', script, path, baseSha, origin?.branch ?? '', origin?.url ?? ''], { stdin: bundle, timeoutMs: 120_000 });
  if (result.exitCode !== 0) {
    throw new DockhandError('sandbox_unavailable', `moving the workspace to ${baseSha} failed (exit ${result.exitCode}): ${result.stderr.toString('utf8').trim()}`);
  }
  await verifyWorkspace(sandbox, baseSha);
}

export async function verifyWorkspace(sandbox: DockerSandbox, baseSha: string): Promise<void> {
  const state = await sandbox.workspaceState();
  if (state.head !== baseSha) {
    throw new DockhandError('sandbox_unavailable', `workspace is at ${state.head || 'no commit'}, expected ${baseSha}`);
  }
  if (!state.clean) {
    throw new DockhandError('sandbox_unavailable', `workspace at ${baseSha} is not clean:\n${state.status}`);
  }
  sandbox.baseSha = baseSha;
}
