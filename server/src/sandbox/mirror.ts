import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rename, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { DockhandError } from '../errors';
import { KeyedQueue } from '../keyed-queue';
import { checkGitSource, GitChildren, GitCommandError, removeFetchLeftovers } from '../git-child';

/**
 * Server-side bare mirrors of the repositories tasks work on, under `<dataDir>/mirrors/<hash>.git`.
 * Sandboxes never fetch: they get commits from here as git bundles. A fetch happens only when a
 * requested SHA is missing. Updates of one mirror run one at a time; a caller queued behind one
 * that brought its commit does not fetch again.
 *
 * `repo` is a registered repository's name: the mirror is made from that registration's source
 * (`sources`), never from a string a user typed in a task. Without `sources` (the sandbox layer's
 * own tests) `repo` is the source itself. Either way the source passes `checkGitSource` first, and
 * every git child has a limit (clones and fetches: no progress for `fetchInactivityMs`; the rest a
 * total time), dies with the caller's signal and with `close()` (git-child.ts). A killed fetch's
 * temporary pack is removed before the next one, a killed clone's directory at once.
 */
export type RepoSources = (repo: string) => string | Promise<string>;

export interface RepoMirrorOptions {
  sources?: RepoSources;
  /** A clone or fetch from a source is stopped after this long without progress (default 120 s), never at a total time. */
  fetchInactivityMs?: number;
}

export interface EnsureOptions {
  signal?: AbortSignal;
  /** Total limit of a short call to the source (ls-remote); clones and fetches have the inactivity limit. */
  timeoutMs?: number;
}

const FETCH_INACTIVITY_MS = 120_000;

const LOCAL_TIMEOUT_MS = 60_000;

export class RepoMirror {
  /**
   * Clones and fetches, one at a time per mirror: two `git fetch`es into one repository fail on
   * each other's ref locks, and two clones replace each other's directory under its readers.
   */
  private readonly updates = new KeyedQueue();
  /** Every git child of this mirror; `close()` kills them all. */
  readonly children = new GitChildren();

  constructor(private readonly dataDir: string, private readonly options: RepoMirrorOptions = {}) {}

  /** Path of the bare mirror for `repo`, made or updated so it holds `sha`. */
  async ensure(repo: string, sha: string, options: EnsureOptions = {}): Promise<string> {
    const path = this.pathFor(repo);
    // Read-only and lock-free: most calls find the commit and go. Otherwise one update at a time
    // per mirror, each checking again first (the one before it may have brought the commit).
    if (await this.has(path, sha)) return path;
    return this.updates.run(path, async () => ((await this.has(path, sha)) ? path : this.update(repo, path, sha, options)));
  }

  pathFor(repo: string): string {
    const key = createHash('sha256').update(repo).digest('hex').slice(0, 24);
    return join(this.dataDir, 'mirrors', `${key}.git`);
  }

  /** The branch the mirror's HEAD names (its source's default branch at the last fetch). */
  async defaultBranch(repo: string): Promise<string | undefined> {
    const path = this.pathFor(repo);
    if (!existsSync(path)) return undefined;
    const head = await this.local(path, ['symbolic-ref', '--short', 'HEAD']).catch(() => undefined);
    return head?.toString().trim() || undefined;
  }

  /**
   * The commit `branch` names at the source now (the mirror is made or fetched first); for a
   * readiness check at the default branch's head.
   */
  async branchHead(repo: string, branch: string, options: EnsureOptions = {}): Promise<string> {
    const path = this.pathFor(repo);
    await this.updates.run(path, () => this.update(repo, path, undefined, options));
    const sha = await this.local(path, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`]).catch(() => undefined);
    const found = sha?.toString().trim();
    if (!found) throw new DockhandError('not_found', `branch ${branch} is not in ${repo}`, { field: 'branch', hint: 'pass a commit SHA instead (--sha)' });
    return found;
  }

  /** Does the mirror hold `sha` as a commit (no fetch)? */
  async holds(repo: string, sha: string): Promise<boolean> {
    return this.has(this.pathFor(repo), sha);
  }

  /** The bytes of file `path` at `sha`, or undefined when it does not exist there. */
  async show(mirror: string, sha: string, path: string): Promise<Buffer | undefined> {
    try {
      return await this.local(mirror, ['show', `${sha}:${path}`]);
    } catch {
      return undefined;
    }
  }

  /**
   * The bytes of several files at `sha` from one `git cat-file --batch` (one process, not one per
   * file); a path that does not exist there, or is not a file, maps to undefined.
   */
  async showMany(mirror: string, sha: string, paths: readonly string[]): Promise<Map<string, Buffer | undefined>> {
    const found = new Map<string, Buffer | undefined>();
    const asked = [...new Set(paths)].filter((path) => !/[\n\r]/.test(path));
    if (asked.length === 0) return found;
    const out = await this.children.run(['cat-file', '--batch'], {
      cwd: mirror,
      timeoutMs: LOCAL_TIMEOUT_MS,
      what: 'git cat-file --batch',
      stdin: asked.map((path) => `${sha}:${path}\n`).join(''),
    });
    let offset = 0;
    for (const path of asked) {
      const end = out.stdout.indexOf(0x0a, offset);
      if (end < 0) break;
      const header = out.stdout.subarray(offset, end).toString();
      offset = end + 1;
      // "<oid> <type> <size>" then the content and a newline; anything else ("<name> missing") has no body.
      const match = /^[0-9a-f]{40,64} (\w+) (\d+)$/.exec(header);
      if (!match) {
        found.set(path, undefined);
        continue;
      }
      const size = Number(match[2]);
      found.set(path, match[1] === 'blob' ? Buffer.from(out.stdout.subarray(offset, offset + size)) : undefined);
      offset += size + 1;
    }
    return found;
  }

  /**
   * The files (blobs, not subdirectories or submodules) directly in directory `dir` at `sha`, as
   * repository paths (`.github/workflows/ci.yml`); none when `dir` does not exist there.
   */
  async filesIn(mirror: string, sha: string, dir: string): Promise<string[]> {
    const out = await this.local(mirror, ['ls-tree', '-z', sha, '--', `${dir.replace(/\/+$/, '')}/`]);
    return out
      .toString()
      .split('\0')
      .flatMap((entry) => {
        // "<mode> <type> <oid>\t<path>"
        const tab = entry.indexOf('\t');
        return tab > 0 && entry.slice(0, tab).split(' ')[1] === 'blob' ? [entry.slice(tab + 1)] : [];
      });
  }

  /** Top-level file names at `sha` (for lockfile discovery). */
  async rootFiles(mirror: string, sha: string): Promise<string[]> {
    const out = await this.local(mirror, ['ls-tree', '--name-only', sha]);
    return out.toString().split('\n').filter((line) => line !== '');
  }

  /**
   * A bundle holding `sha` under a `refs/dockhand/` ref (the receiver fetches that namespace and
   * checks out the SHA). When `have` is given (a commit the receiver
   * already has, e.g. the snapshot's), the bundle holds only what is missing beyond it.
   */
  async bundle(mirror: string, sha: string, have?: string): Promise<Buffer> {
    const dir = await mkdtemp(join(tmpdir(), 'dockhand-bundle-'));
    const file = join(dir, 'repo.bundle');
    // A per-bundle ref name: concurrent bundles of the same mirror must not race on one ref.
    const ref = `refs/dockhand/bundle-${createHash('sha256').update(`${sha}${have ?? ''}${dir}`).digest('hex').slice(0, 12)}`;
    try {
      await this.local(mirror, ['update-ref', ref, sha]);
      const canThin = have !== undefined && have !== sha && (await this.isAncestor(mirror, have, sha));
      await this.local(mirror, ['bundle', 'create', file, ref, ...(canThin ? [`^${have}`] : [])]);
      return await readFile(file);
    } finally {
      await this.local(mirror, ['update-ref', '-d', ref]).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Kills every git child of this mirror (hung fetches included) and refuses new ones. */
  close(): void {
    this.children.killAll();
  }

  private async local(cwd: string, args: string[]): Promise<Buffer> {
    return (await this.children.run(args, { cwd, timeoutMs: LOCAL_TIMEOUT_MS, what: `git ${args[0]}` })).stdout;
  }

  private async has(path: string, sha: string): Promise<boolean> {
    if (!existsSync(path)) return false;
    try {
      return (await this.local(path, ['cat-file', '-t', sha])).toString().trim() === 'commit';
    } catch {
      return false;
    }
  }

  private async isAncestor(mirror: string, ancestor: string, sha: string): Promise<boolean> {
    try {
      await this.local(mirror, ['merge-base', '--is-ancestor', ancestor, sha]);
      return true;
    } catch {
      return false;
    }
  }

  private async update(repo: string, path: string, sha: string | undefined, options: EnsureOptions): Promise<string> {
    const source = checkGitSource(this.options.sources ? await this.options.sources(repo) : repo, 'repo').source;
    const run = (args: string[], cwd: string | undefined, what: string) =>
      this.children.run(args, {
        ...(cwd ? { cwd } : {}),
        timeoutMs: options.timeoutMs ?? 60_000,
        ...(options.signal ? { signal: options.signal } : {}),
        what,
      });
    // Clones and fetches: stopped when nothing moves for the limit, never for being long (--progress prints while it moves).
    const transfer = (args: string[], cwd: string | undefined, what: string) =>
      this.children.run([args[0] ?? '', '--progress', ...args.slice(1).filter((arg) => arg !== '--quiet')], {
        ...(cwd ? { cwd } : {}),
        inactivityMs: this.options.fetchInactivityMs ?? FETCH_INACTIVITY_MS,
        ...(options.signal ? { signal: options.signal } : {}),
        what,
      });
    await mkdir(join(this.dataDir, 'mirrors'), { recursive: true });
    // What a killed clone or fetch of this mirror left (this queue is its one writer).
    await this.removeLeftovers(path);
    try {
      if (!existsSync(join(path, 'HEAD'))) {
        // Into a temporary name first: a clone cut short (no progress, cancel) leaves no half mirror.
        const partial = `${path}.partial-${process.pid}-${Date.now()}`;
        try {
          await transfer(['clone', '--mirror', '--quiet', '--', source, partial], undefined, `mirroring ${repo}`);
          await rm(path, { recursive: true, force: true });
          await rename(partial, path);
        } finally {
          await rm(partial, { recursive: true, force: true });
        }
      } else {
        // Not refs/dockhand/*: the refs of bundles being made from this mirror right now, which a
        // prune of everything the source lacks would delete under them.
        try {
          await transfer(['fetch', '--prune', '--quiet', 'origin', '+refs/*:refs/*', '^refs/dockhand/*'], path, `fetching ${repo}`);
        } finally {
          await removeFetchLeftovers(path);
        }
        await this.refreshHead(path, source, run);
      }
      if (sha !== undefined && !(await this.has(path, sha))) {
        // Not on any branch: some forges serve unadvertised commits by SHA.
        await transfer(['fetch', '--quiet', 'origin', sha], path, `fetching ${sha} of ${repo}`).catch(() => undefined);
      }
    } catch (error) {
      if (error instanceof GitCommandError) {
        throw new DockhandError('repository_unavailable', `${repo}: its source could not be read: ${error.message}`, {
          hint: 'check the registration\'s source (`dockhand repo list`) and that it is a git repository the server can read',
        });
      }
      throw error;
    }
    if (sha !== undefined && !(await this.has(path, sha))) {
      throw new DockhandError('not_found', `commit ${sha} is not in ${repo}`, {
        field: 'baseSha',
        hint: 'push the commit (or pick one that exists on the remote) and send the task again',
      });
    }
    return path;
  }

  /** A fetch's temporary packs and stale locks, and clones into `<hash>.git.partial-*` a killed process left. */
  private async removeLeftovers(path: string): Promise<void> {
    if (existsSync(path)) await removeFetchLeftovers(path);
    const dir = dirname(path);
    for (const name of await readdir(dir).catch(() => [])) {
      if (name.startsWith(`${basename(path)}.partial-`)) await rm(join(dir, name), { recursive: true, force: true });
    }
  }

  /** The source's default branch may have changed: the mirror's HEAD follows it. */
  private async refreshHead(
    path: string,
    source: string,
    run: (args: string[], cwd: string | undefined, what: string) => Promise<{ stdout: Buffer }>,
  ): Promise<void> {
    const listing = await run(['ls-remote', '--symref', '--', source, 'HEAD'], path, 'reading the default branch').catch(() => undefined);
    const branch = /^ref: refs\/heads\/(\S+)\s+HEAD$/m.exec(listing?.stdout.toString() ?? '')?.[1];
    if (branch && (await this.has(path, `refs/heads/${branch}`))) {
      await this.local(path, ['symbolic-ref', 'HEAD', `refs/heads/${branch}`]).catch(() => undefined);
    }
  }
}
