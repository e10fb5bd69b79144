import { existsSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { isAbsolute, join, normalize } from 'node:path';
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
 * - Every child has a limit and runs in its own process group; on the limit, abort (the task was
 *   cancelled) or `killAll` (shutdown) the whole group gets SIGKILL at once: a remote helper
 *   (git-remote-https, ssh) that hangs dies with git. Nobody waits on a hung child. Short calls
 *   (ls-remote, rev-parse, …) have a total time limit; a fetch or clone, whose time grows with the
 *   repository, has an inactivity limit instead (`inactivityMs`: git runs with `--progress`, which
 *   prints while anything moves, so only a transfer that stopped is killed, never a slow one).
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
  /** Killed (with its process group) after this long; default 60 s. Ignored with `inactivityMs`. */
  timeoutMs?: number;
  /**
   * Killed after this long without output instead of at a total time (fetches and clones: pass
   * `--progress` so git prints while it works). The error then says "no progress for N s".
   */
  inactivityMs?: number;
  /** Told git's progress (`--progress` lines: stage, counts, bytes) as it prints it. */
  onProgress?: (progress: GitProgress) => void;
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
    const limit = options.inactivityMs !== undefined ? { idleTimeoutMs: options.inactivityMs } : { timeoutMs: options.timeoutMs ?? 60_000 };
    // With --progress, stderr is mostly progress lines: the lines git *said* are kept apart, so an
    // error names git's reason and not the last percentage.
    const progress = options.inactivityMs !== undefined || options.onProgress ? new ProgressReader(options.onProgress) : undefined;
    this.live += 1;
    const result = await runChild('git', ['-c', 'credential.helper=', '-c', 'core.hooksPath=/dev/null', '-c', 'core.fsmonitor=false', ...args], {
      ...(options.cwd ? { cwd: options.cwd } : {}),
      env: gitChildEnvironment(),
      ...(options.stdin !== undefined ? { stdin: options.stdin } : {}),
      ...limit,
      ...(progress ? { onStderr: (chunk: string) => progress.read(chunk) } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.maxBuffer !== undefined ? { maxBuffer: options.maxBuffer } : {}),
      onKillAll: (kill) => {
        this.killers.add(kill);
        return () => this.killers.delete(kill);
      },
    }).finally(() => (this.live -= 1));
    if (result.killed) {
      if (options.inactivityMs !== undefined && result.killed.startsWith('printed nothing')) throw noProgress(what, options.inactivityMs);
      if (result.killed.startsWith('did not finish')) throw notAnswering(what, result.killed);
      throw new DockhandError('repository_unavailable', `${what}: ${result.killed}`);
    }
    if (result.error || result.code !== 0) {
      const err = progress ? progress.said() : result.stderr;
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

/*
 * One wording per cause of a failed transfer from a source, whichever caller met it:
 * - no progress: the transfer started and then stopped moving (killed at the inactivity limit);
 * - not answering: the source never answered a short call (ls-remote) within its time limit;
 * - missing objects: the source answered, but its history lacks objects (forge/branch-copy.ts).
 */

/** The source stopped sending: a fetch or clone printed and received nothing for the limit. */
export function noProgress(what: string, inactivityMs: number): DockhandError {
  return new DockhandError('repository_unavailable', `${what}: no progress for ${Math.round(inactivityMs / 1000)} s (git received nothing and printed nothing), so it was stopped`, {
    hint: 'check that the source answers (git ls-remote <source>) and run the same command again: it continues from what was received completely',
  });
}

/** The source did not answer a short call within its limit. */
export function notAnswering(what: string, why: string): DockhandError {
  return new DockhandError('repository_unavailable', `${what}: the source does not answer (${why})`, {
    hint: 'check that the source answers (git ls-remote <source>), then try again',
  });
}

/** True for the inactivity stop of a fetch or clone (a rerun continues; copying branch by branch would not help). */
export function isNoProgress(error: unknown): boolean {
  return error instanceof DockhandError && error.code === 'repository_unavailable' && / no progress for \d+ s /.test(error.message);
}

/** One `--progress` line of git: the stage ("Receiving objects"), counts and bytes where it says them. */
export interface GitProgress {
  stage: string;
  percent?: number;
  done?: number;
  total?: number;
  /** As git prints it ("12.00 MiB"). */
  bytes?: string;
}

const PROGRESS = /^(?:remote: )?([A-Z][A-Za-z ]+?):\s+(?:(\d+)% \((\d+)\/(\d+)\)|(\d+))(?:, ([\d.]+ [KMGT]?i?B))?/;

/** Splits git's stderr into progress (told to `onProgress`) and what git said (kept for the error). */
class ProgressReader {
  private partial = '';
  private kept = '';

  constructor(private readonly onProgress?: (progress: GitProgress) => void) {}

  read(chunk: string): void {
    const lines = (this.partial + chunk).split(/[\r\n]/);
    this.partial = lines.pop() ?? '';
    for (const line of lines) this.line(line);
  }

  said(): string {
    if (this.partial) this.line(this.partial);
    this.partial = '';
    return this.kept;
  }

  private line(line: string): void {
    const match = PROGRESS.exec(line.trim());
    if (!match) {
      // The tail is what matters (git's fatal line comes last).
      if (line.trim()) this.kept = `${this.kept}${line}\n`.slice(-16_384);
      return;
    }
    const [, stage = '', percent, done, total, count, bytes] = match;
    this.onProgress?.({
      stage,
      ...(percent !== undefined ? { percent: Number(percent), done: Number(done), total: Number(total) } : { done: Number(count) }),
      ...(bytes ? { bytes } : {}),
    });
  }
}

/**
 * Removes what a killed fetch or clone left in a repository: the pack it was receiving
 * (`objects/pack/tmp_pack_*`, `tmp_idx_*`, `tmp_rev_*`), quarantine directories (`objects/incoming-*`)
 * and lock files (`*.lock` under refs/, `packed-refs.lock`, `shallow.lock`, `FETCH_HEAD.lock`).
 * git keeps a received pack only once it is complete, so nothing of value goes. Called by the one
 * fetcher of the repository (its queue) before its next fetch; lock files younger than
 * `lockAgeMs` are left (a push into the repository may hold one for milliseconds).
 */
export async function removeFetchLeftovers(gitDir: string, lockAgeMs = 60_000): Promise<string[]> {
  const removed: string[] = [];
  const remove = async (path: string) => {
    await rm(path, { recursive: true, force: true });
    removed.push(path);
  };
  const entries = async (dir: string) => readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of await entries(join(gitDir, 'objects', 'pack'))) {
    if (/^(tmp_pack_|tmp_idx_|tmp_rev_|\.tmp-)/.test(entry.name)) await remove(join(gitDir, 'objects', 'pack', entry.name));
  }
  for (const entry of await entries(join(gitDir, 'objects'))) {
    if (entry.name.startsWith('incoming-') || entry.name.startsWith('tmp_obj_')) await remove(join(gitDir, 'objects', entry.name));
  }
  const old = async (path: string) => Date.now() - (await stat(path).then((found) => found.mtimeMs, () => Date.now())) > lockAgeMs;
  for (const name of ['packed-refs.lock', 'shallow.lock', 'FETCH_HEAD.lock', 'HEAD.lock', 'config.lock']) {
    const path = join(gitDir, name);
    if (existsSync(path) && (await old(path))) await remove(path);
  }
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await entries(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.name.endsWith('.lock') && (await old(path))) await remove(path);
    }
  };
  await walk(join(gitDir, 'refs'));
  return removed;
}
