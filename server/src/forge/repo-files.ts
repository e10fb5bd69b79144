import { parseRepoPolicy, POLICY_FILE_PATH, type RepoPolicy } from '../policy/repo-policy';
import { createGit, tryRaw } from './git';

/**
 * Reading files of a repository at a commit, from the server's own clone or mirror: the policy
 * is read at the task's base SHA, never from the agent's working tree, so the agent cannot
 * loosen the rules it is checked against.
 */

/** The file's text at `sha`, or undefined when the file does not exist there. */
export async function readFileAtCommit(repoDir: string, sha: string, path: string): Promise<string | undefined> {
  if (!/^[0-9a-f]{40}$/.test(sha)) return undefined;
  const git = createGit(repoDir);
  if ((await tryRaw(git, ['cat-file', '-e', `${sha}:${path}`])) === undefined) return undefined;
  return git.raw(['show', `${sha}:${path}`]);
}

/** `.dockhand/policy.yml` at `sha`, parsed (defaults when absent; `bad_request` naming the field when invalid). */
export async function loadRepoPolicy(repoDir: string, sha: string): Promise<RepoPolicy> {
  return parseRepoPolicy(await readFileAtCommit(repoDir, sha, POLICY_FILE_PATH));
}
