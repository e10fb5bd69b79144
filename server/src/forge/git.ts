import { simpleGit, type SimpleGit } from 'simple-git';
import { DockhandError } from '../errors';
import { redact } from './redact';

/**
 * simple-git instances for the forge and the push. Two rules hold for every git child process:
 *
 * - Its environment is built from a short allowlist, never the server's whole environment, so
 *   no server secret (model API key, webhook secret) and no ambient `GIT_*` override reaches git.
 *   System and global git config are not read either (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL`
 *   = /dev/null): a stray `core.fsmonitor`, `core.hooksPath` or `url.*.insteadOf` on the server
 *   cannot run programs or reroute the push. Proxies and extra CA bundles still pass through
 *   their environment variables.
 * - Configured credential helpers are reset (`credential.helper=` empties the list), so a global
 *   `store` helper can never be handed the push token to write to disk. When a token is given,
 *   the only helper is a shell function that prints it from `DOCKHAND_PUSH_TOKEN`, a variable
 *   that exists only in that one child's environment: not on the command line, not in a remote
 *   URL, not in any file.
 */

export const TOKEN_ENV = 'DOCKHAND_PUSH_TOKEN';
export const DEFAULT_TOKEN_USERNAME = 'x-access-token';

const PASSED_ENV = [
  'PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'TZ',
  'SSL_CERT_FILE', 'SSL_CERT_DIR', 'GIT_SSL_CAINFO',
  'HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy',
] as const;
const ALLOWED_GIT_ENV = [
  'GIT_TERMINAL_PROMPT', 'GIT_AUTHOR_DATE', 'GIT_COMMITTER_DATE', 'GIT_SSL_CAINFO', 'GIT_CONFIG_NOSYSTEM', 'GIT_CONFIG_GLOBAL', 'GIT_INDEX_FILE',
];

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
  const env: Record<string, string> = {};
  for (const name of PASSED_ENV) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
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

export function createGit(dir: string, options: GitOptions = {}): SimpleGit {
  const username = options.username ?? DEFAULT_TOKEN_USERNAME;
  if (!/^[A-Za-z0-9._@-]+$/.test(username)) {
    throw new DockhandError('bad_request', 'username: only letters, digits and ._@- are allowed', { field: 'username' });
  }
  const config = ['credential.helper=', 'commit.gpgSign=false', 'tag.gpgSign=false', 'core.autocrlf=false'];
  if (options.token !== undefined) config.push(`credential.helper=${credentialHelper(username)}`);
  return simpleGit({
    baseDir: dir,
    config,
    allowEnvironment: ALLOWED_GIT_ENV,
    // Credential helper: ours, above. Config paths: only to point GIT_CONFIG_GLOBAL at /dev/null.
    unsafe: { allowUnsafeCredentialHelper: true, allowUnsafeConfigPaths: true },
    timeout: { block: options.timeoutMs ?? 120_000 },
  }).env(childEnvironment(options));
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
export async function tryRaw(git: SimpleGit, args: string[]): Promise<string | undefined> {
  try {
    return (await git.raw(args)).trim();
  } catch {
    return undefined;
  }
}
