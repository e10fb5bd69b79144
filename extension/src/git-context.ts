import { execFile } from 'node:child_process';

/*
 * What the task needs to know about the developer's repository, read with the git CLI (always
 * present where the built-in Git extension works, and testable against a real repository).
 */

export interface WorkspaceGitState {
  root: string;
  /** The `origin` remote (or the first remote); the repository path when there is none. */
  repo: string;
  hasRemote: boolean;
  branch?: string;
  headSha: string;
  dirty: boolean;
  /** HEAD is on some remote-tracking branch (so the server can fetch the base). */
  pushed: boolean;
}

function git(cwd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`git ${args.join(' ')} failed: ${stderr.trim() || error.message}`));
      else resolve(stdout.trim());
    });
  });
}

async function gitOr(cwd: string, args: string[], fallback: string): Promise<string> {
  try {
    return await git(cwd, args);
  } catch {
    return fallback;
  }
}

export async function readGitState(folder: string): Promise<WorkspaceGitState> {
  let root: string;
  try {
    root = await git(folder, ['rev-parse', '--show-toplevel']);
  } catch {
    throw new Error(`${folder} is not inside a git repository. Dockhand works on a commit of a git repository.`);
  }
  const headSha = await gitOr(root, ['rev-parse', 'HEAD'], '');
  if (!/^[0-9a-f]{40}$/.test(headSha)) throw new Error(`The repository at ${root} has no commit yet; commit something first.`);
  const branchName = await gitOr(root, ['rev-parse', '--abbrev-ref', 'HEAD'], 'HEAD');
  const remotes = (await gitOr(root, ['remote'], '')).split('\n').filter(Boolean);
  const remoteName = remotes.includes('origin') ? 'origin' : remotes[0];
  const remoteUrl = remoteName ? await gitOr(root, ['remote', 'get-url', remoteName], '') : '';
  const status = await gitOr(root, ['status', '--porcelain', '--untracked-files=normal'], '');
  const containing = remoteName ? await gitOr(root, ['branch', '-r', '--contains', headSha], '') : '';
  return {
    root,
    repo: remoteUrl || root,
    hasRemote: Boolean(remoteUrl),
    branch: branchName === 'HEAD' ? undefined : branchName,
    headSha,
    dirty: status.length > 0,
    pushed: containing.length > 0,
  };
}

/**
 * Applies the agent's diff to the developer's clone on a new branch started at the task's base
 * commit, so it can be run and edited locally. Refuses a dirty tree rather than mixing changes.
 */
export async function applyDiffOnNewBranch(root: string, input: { branch: string; baseSha: string; diff: string }): Promise<void> {
  const status = await gitOr(root, ['status', '--porcelain'], '');
  if (status) throw new Error('The working tree has uncommitted changes; commit or stash them before applying the agent\'s changes.');
  if (!input.diff.trim()) throw new Error('The task has no changes to apply.');
  await git(root, ['switch', '--quiet', '-c', input.branch, input.baseSha]);
  await new Promise<void>((resolve, reject) => {
    const child = execFile('git', ['apply', '--index', '--whitespace=nowarn', '-'], { cwd: root }, (error, _stdout, stderr) => {
      if (error) reject(new Error(`git apply failed: ${stderr.trim() || error.message}`));
      else resolve();
    });
    child.stdin?.end(input.diff);
  });
}
