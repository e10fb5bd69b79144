import { DockhandError } from '../errors';
import type { DockerSandbox } from './docker-sandbox';

/**
 * Moves a sandbox's workspace to `baseSha` without network: the bundle (made from the server's
 * mirror) is streamed in over exec stdin, fetched from, and checked out. Ends by verifying HEAD and
 * a clean tree; anything else fails loudly rather than handing out a workspace at the wrong commit.
 */
export async function checkoutFromBundle(sandbox: DockerSandbox, baseSha: string, bundle: Buffer): Promise<void> {
  const path = `/tmp/.dockhand-${baseSha.slice(0, 12)}.bundle`;
  const script =
    'set -e; cat > "$0"; ' +
    'git fetch -q --no-tags "$0" "+refs/dockhand/*:refs/dockhand/*"; rm -f "$0"; ' +
    // A snapshot whose install changed the workspace (install-made.ts) keeps those changes where
    // the commit allows: its files are carried over, tracked ones reset where the commit differs.
    'if [ -e .git/dockhand-install-made ]; then git checkout -q --detach "$1" 2>/dev/null || git checkout -q -f --detach "$1"; ' +
    'else git checkout -q --detach "$1"; git clean -fdq; fi';
  const result = await sandbox.raw(['sh', '-c', script, path, baseSha], { stdin: bundle, timeoutMs: 120_000 });
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
