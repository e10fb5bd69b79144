import { isAbsolute, normalize } from 'node:path';
import { DockhandError } from './errors';
import { runChild } from './spawner';

/*
 * Git child processes that talk to a repository's source (clone, fetch, ls-remote) or read a
 * server-side repository. Three rules, because a source can be hostile or simply never answer:
 *
 * - Only registered sources reach git, and only these forms: an absolute local path, `https://…`,
 *   `ssh://…` and `git@host:path`. Transport helpers (`ext::`, `fd::`, any `x::y`), `file://`,
 *   plain `http://`, credentials in a URL and anything starting with `-` (git would read it as an
 *   option) are refused before any process starts. `GIT_ALLOW_PROTOCOL` says the same to git, so
 *   a redirect or a submodule cannot reach another transport either.
 * - Every child has a timeout and runs in its own process group; on timeout, abort (the task was
 *   cancelled) or `killAll` (shutdown) the whole group gets SIGKILL at once: a remote helper
 *   (git-remote-https, ssh) that hangs dies with git. Nobody waits on a hung child.
 * - The environment is a short allowlist (no server secret, no ambient GIT_* override), system and
 *   global git config are not read, and no terminal prompt can block.
 *
 * This module may be imported by every layer of `server/` (like head-and-tail.ts).
 */

export type GitSourceKind = 'path' | 'https' | 'ssh';

const HOST = /^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})$/;

/**
 * Checks a repository source before git ever sees it; throws `bad_request` naming `field`. The
 * returned value is the canonical form (a normalised absolute path, or the URL unchanged).
 */
export function checkGitSource(source: string, field = 'source'): { source: string; kind: GitSourceKind } {
  const refuse = (why: string, hint = 'use an absolute path on the server host, https://host/owner/repo.git, ssh://git@host/owner/repo.git or git@host:owner/repo.git'): never => {
    throw new DockhandError('bad_request', `${field}: ${JSON.stringify(source.slice(0, 200))} ${why}`, { field, hint });
  };
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(source)) refuse('contains control characters');
  if (source.trim() !== source || source === '') refuse('has leading or trailing white space');
  if (source.startsWith('-')) refuse('starts with "-", which git would read as an option');
  if (source.includes('::')) refuse('uses a git transport helper ("<transport>::…"), which is never allowed');
  if (isAbsolute(source)) {
    const path = normalize(source).replace(/\/+$/, '') || '/';
    if (source.split('/').includes('..')) refuse('must not contain ".." segments');
    return { source: path, kind: 'path' };
  }
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(source)?.[1]?.toLowerCase();
  if (scheme === 'file') refuse('is a file:// URL', 'register the absolute path instead (no file:// and no options)');
  if (scheme === 'http') refuse('is plain http://', 'use https:// (or ssh://)');
  if (scheme === 'https' || scheme === 'ssh') {
    let url: URL;
    try {
      url = new URL(source);
    } catch {
      return refuse('is not a valid URL');
    }
    if (url.password || (scheme === 'https' && url.username)) refuse('carries credentials', 'register the URL without user or password; the push token is configured on the server');
    if (!HOST.test(url.hostname.replace(/^\[|\]$/g, '')) && !/^\[[0-9a-f:.]+\]$/i.test(url.hostname)) refuse('has an invalid host name');
    if (url.search || url.hash) refuse('has a query or fragment');
    if (url.pathname === '/' || url.pathname === '') refuse('names no repository path');
    if (/(^|\/)-/.test(decodeURIComponent(url.pathname))) refuse('has a path segment starting with "-"');
    return { source, kind: scheme };
  }
  if (scheme) refuse(`uses the ${scheme}:// scheme, which is not allowed`);
  const scp = /^([A-Za-z0-9._-]+)@([A-Za-z0-9.-]+):(.+)$/.exec(source);
  if (scp) {
    const [, user = '', host = '', path = ''] = scp;
    if (user.startsWith('-') || host.startsWith('-') || !HOST.test(host)) refuse('has an invalid user or host');
    if (path.startsWith('-') || path.startsWith('/-') || /\s/.test(path)) refuse('has an invalid repository path');
    return { source, kind: 'ssh' };
  }
  return refuse('is neither an absolute path nor an https://, ssh:// or git@host:path URL');
}

/** What every git child may have of the server's environment: paths, locale, CA bundles, the HTTPS proxy. */
const PASSED_ENV = [
  'PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'TZ',
  'SSL_CERT_FILE', 'SSL_CERT_DIR', 'GIT_SSL_CAINFO',
  'HTTPS_PROXY', 'https_proxy', 'NO_PROXY', 'no_proxy',
] as const;

/**
 * The server's values of the allowlisted names and of `extraNames`, those that are set; nothing
 * else of its environment (no server secret, no ambient GIT_* override). The lists differ on
 * purpose: a source fetch adds SSH_AUTH_SOCK (ssh:// sources), the forge's git the plain-HTTP proxy.
 */
export function passedEnvironment(extraNames: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of [...PASSED_ENV, ...extraNames]) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

export function gitChildEnvironment(extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...passedEnvironment(['SSH_AUTH_SOCK']),
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ALLOW_PROTOCOL: 'file:https:ssh',
    // No password prompt, no host-key prompt, and a connect timeout of its own.
    GIT_SSH_COMMAND: 'ssh -o BatchMode=yes -o ConnectTimeout=20 -o StrictHostKeyChecking=yes',
    ...extra,
  };
}

export interface GitRunOptions {
  cwd?: string;
  /** Killed (with its process group) after this long; default 60 s. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** What the command was for, in the error message ("fetching shop from https://…"). */
  what?: string;
  maxBuffer?: number;
  /** Written to the child's stdin (then closed); without it stdin is /dev/null. */
  stdin?: Buffer | string;
}

export interface GitRunResult {
  stdout: Buffer;
  stderr: string;
}

/**
 * A set of git children that can all be killed at once (shutdown). They are started by the
 * process's spawner (`spawner.ts`), so a git child costs the server no fork of its own.
 */
export class GitChildren {
  private live = 0;
  private closed = false;
  private readonly killers = new Set<() => void>();

  /** How many git children are running now (tests assert none is left). */
  get running(): number {
    return this.live;
  }

  async run(args: string[], options: GitRunOptions = {}): Promise<GitRunResult> {
    const what = options.what ?? `git ${args[0] ?? ''}`;
    if (this.closed) throw new DockhandError('repository_unavailable', `${what}: the server is shutting down`);
    if (options.signal?.aborted) throw new DockhandError('repository_unavailable', `${what}: cancelled`);
    const timeoutMs = options.timeoutMs ?? 60_000;
    this.live += 1;
    const result = await runChild('git', ['-c', 'credential.helper=', '-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', ...args], {
      ...(options.cwd ? { cwd: options.cwd } : {}),
      env: gitChildEnvironment(),
      ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
      timeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.maxBuffer !== undefined ? { maxBuffer: options.maxBuffer } : {}),
      onKillAll: (kill) => {
        this.killers.add(kill);
        return () => this.killers.delete(kill);
      },
    }).finally(() => (this.live -= 1));
    if (result.killed) {
      throw new DockhandError('repository_unavailable', `${what}: ${result.killed}`, { hint: 'check that the repository source answers, then try again' });
    }
    if (result.error || result.code !== 0) {
      const err = result.stderr;
      throw new GitCommandError(`${what}: ${(err.trim().split('\n').at(-1) ?? '') || (result.error?.message ?? `git exited with ${result.code}`)}`, err);
    }
    return { stdout: result.stdout, stderr: result.stderr };
  }

  /** Kills every running child now and refuses new ones. */
  killAll(): void {
    this.closed = true;
    for (const kill of [...this.killers]) kill();
  }
}

/** git ran and exited non-zero (not a timeout): the repository answered "no". */
export class GitCommandError extends Error {
  constructor(message: string, readonly stderr: string) {
    super(message);
    this.name = 'GitCommandError';
  }
}
