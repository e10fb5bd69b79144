import { DockhandError } from '../errors';
import { passedEnvironment } from '../git-child';
import { runChild } from '../spawner';
import { redact } from './redact';

/**
 * Git for the forge and the push: `createGit(dir).raw(args)` runs `git -c … <args>` in `dir`
 * through the process's spawner (`spawner.ts`), so a push costs the server no fork of its own.
 * (This was simple-git, whose `raw` was all the forge used; it spawns in-process, and those forks
 * were the workers' largest CPU cost and event-loop stall — see spawner.ts.) Two rules hold for
 * every git child process:
 *
 * - Its environment is built from a short allowlist, never the server's whole environment, so
 *   no server secret (model API key, webhook secret) and no ambient `GIT_*` override reaches git.
 *   System and global git config are not read either (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL`
 *   = /dev/null): a stray `core.fsmonitor`, `core.hooksPath` or `url.*.insteadOf` on the server
 *   cannot run programs or reroute the push. Proxies and extra CA bundles still pass through
 *   their environment variables.
 *   `PATH` is how git finds `ssh-keygen` when a push signs its commit (`commit-tree -S` with
 *   `gpg.format=ssh`, the key file named on the command line: `push.ts`); no `SSH_AUTH_SOCK`, so
 *   git signs with that file and never with an agent's key.
 * - Configured credential helpers are reset (`credential.helper=` empties the list), so a global
 *   `store` helper can never be handed the push token to write to disk. When a token is given,
 *   the only helper is a shell function that prints it from `DOCKHAND_PUSH_TOKEN`, a variable
 *   that exists only in that one child's environment: not on the command line, not in a remote
 *   URL, not in any file.
 */

export const TOKEN_ENV = 'DOCKHAND_PUSH_TOKEN';
export const DEFAULT_TOKEN_USERNAME = 'x-access-token';

export interface GitOptions {
  /** Token for commands that talk to a remote; omit for local-only work. */
  token?: string;
  username?: string;
  /** Fixed author and committer date (ISO 8601), for reproducible commits. */
  date?: string;
  /** A scratch index instead of the repository's own (commits built without a worktree). */
  indexFile?: string;
  timeoutMs?: number;
}

function credentialHelper(username: string): string {
  // `get` is the only action answered: `store` and `erase` get nothing and do nothing.
  return `!f() { test "$1" = get || exit 0; echo "username=${username}"; echo "password=$${TOKEN_ENV}"; }; f`;
}

export function childEnvironment(options: GitOptions = {}): Record<string, string> {
  const env = passedEnvironment(['HTTP_PROXY', 'http_proxy']);
  env['GIT_TERMINAL_PROMPT'] = '0';
  env['GIT_CONFIG_NOSYSTEM'] = '1';
  env['GIT_CONFIG_GLOBAL'] = '/dev/null';
  if (options.date !== undefined) {
    env['GIT_AUTHOR_DATE'] = options.date;
    env['GIT_COMMITTER_DATE'] = options.date;
  }
  if (options.indexFile !== undefined) env['GIT_INDEX_FILE'] = options.indexFile;
  if (options.token !== undefined) env[TOKEN_ENV] = options.token;
  return env;
}

/** The forge's handle on one repository directory: `raw(args)` resolves git's stdout. */
export interface Git {
  raw(args: string[]): Promise<string>;
}

/** git exited non-zero and printed why (its stderr is the message). */
export class GitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GitError';
  }
}

export function createGit(dir: string, options: GitOptions = {}): Git {
  const username = options.username ?? DEFAULT_TOKEN_USERNAME;
  if (!/^[A-Za-z0-9._@-]+$/.test(username)) {
    throw new DockhandError('bad_request', 'username: only letters, digits and ._@- are allowed', { field: 'username' });
  }
  const config = ['credential.helper=', 'commit.gpgSign=false', 'tag.gpgSign=false', 'core.autocrlf=false'];
  if (options.token !== undefined) config.push(`credential.helper=${credentialHelper(username)}`);
  const prefix = config.flatMap((entry) => ['-c', entry]);
  const env = childEnvironment(options);
  const idleTimeoutMs = options.timeoutMs ?? 120_000;
  return {
    async raw(args: string[]): Promise<string> {
      const result = await runChild('git', [...prefix, ...args], { cwd: dir, env, idleTimeoutMs });
      if (result.killed) throw new GitError(`git ${args[0] ?? ''}: ${result.killed}`);
      if (result.error) throw new GitError(`git ${args[0] ?? ''}: ${result.error.message}`);
      // As simple-git had it: a non-zero exit is a failure when git said why on stderr; one with a
      // silent stderr (`rev-parse --verify --quiet`, `diff --quiet`) resolves with its stdout.
      if (result.code !== 0 && result.stderr.length > 0) throw new GitError(result.stderr);
      return result.stdout.toString('utf8');
    },
  };
}

/** A git failure as a DockhandError whose message has every given secret removed. */
export function gitFailure(
  what: string,
  error: unknown,
  secrets: ReadonlyArray<string | undefined>,
  code: 'internal' | 'conflict' | 'not_found' = 'internal',
): DockhandError {
  const detail = error instanceof Error ? error.message : String(error);
  return new DockhandError(code, redact(`${what}: ${detail.trim()}`, secrets));
}

/** `git <args>` returning trimmed stdout, or undefined when git exits non-zero. */
export async function tryRaw(git: Git, args: string[]): Promise<string | undefined> {
  try {
    return (await git.raw(args)).trim();
  } catch {
    return undefined;
  }
}
