import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import { DockhandError } from '../errors';

/**
 * Server-side bare mirrors of the repositories tasks work on, under `<dataDir>/mirrors/<hash>.git`.
 * Sandboxes never fetch: they get commits from here as git bundles. A fetch happens only when a
 * requested SHA is missing. Concurrent callers for one repo share one fetch.
 */
export class RepoMirror {
  private readonly inflight = new Map<string, Promise<string>>();

  constructor(private readonly dataDir: string) {}

  /** Path of the bare mirror for `repo` (a local path or a remote URL), made or updated so it holds `sha`. */
  async ensure(repo: string, sha: string): Promise<string> {
    const path = this.pathFor(repo);
    const running = this.inflight.get(path);
    if (running) await running.catch(() => undefined);
    if (await this.has(path, sha)) return path;
    const work = this.update(repo, path, sha);
    this.inflight.set(path, work);
    try {
      return await work;
    } finally {
      this.inflight.delete(path);
    }
  }

  pathFor(repo: string): string {
    const key = createHash('sha256').update(repo).digest('hex').slice(0, 24);
    return join(this.dataDir, 'mirrors', `${key}.git`);
  }

  /** The bytes of file `path` at `sha`, or undefined when it does not exist there. */
  async show(mirror: string, sha: string, path: string): Promise<Buffer | undefined> {
    try {
      return await gitBuffer(mirror, ['show', `${sha}:${path}`]);
    } catch {
      return undefined;
    }
  }

  /** Top-level file names at `sha` (for lockfile discovery). */
  async rootFiles(mirror: string, sha: string): Promise<string[]> {
    const out = await simpleGit(mirror).raw(['ls-tree', '--name-only', sha]);
    return out.split('\n').filter((line) => line !== '');
  }

  /**
   * A bundle holding `sha` under a `refs/dockhand/` ref (the receiver fetches that namespace and
   * checks out the SHA). When `have` is given (a commit the receiver
   * already has, e.g. the snapshot's), the bundle holds only what is missing beyond it.
   */
  async bundle(mirror: string, sha: string, have?: string): Promise<Buffer> {
    const dir = await mkdtemp(join(tmpdir(), 'dockhand-bundle-'));
    const file = join(dir, 'repo.bundle');
    const git = simpleGit(mirror);
    // A per-bundle ref name: concurrent bundles of the same mirror must not race on one ref.
    const ref = `refs/dockhand/bundle-${createHash('sha256').update(`${sha}${have ?? ''}${dir}`).digest('hex').slice(0, 12)}`;
    try {
      await git.raw(['update-ref', ref, sha]);
      const canThin = have !== undefined && have !== sha && (await isAncestor(git, have, sha));
      await git.raw(['bundle', 'create', file, ref, ...(canThin ? [`^${have}`] : [])]);
      return await readFile(file);
    } finally {
      await git.raw(['update-ref', '-d', ref]).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    }
  }

  private async has(path: string, sha: string): Promise<boolean> {
    if (!existsSync(path)) return false;
    try {
      const type = await simpleGit(path).raw(['cat-file', '-t', sha]);
      return type.trim() === 'commit';
    } catch {
      return false;
    }
  }

  private async update(repo: string, path: string, sha: string): Promise<string> {
    await mkdir(join(this.dataDir, 'mirrors'), { recursive: true });
    if (!existsSync(path)) {
      await simpleGit().clone(repo, path, ['--mirror', '--quiet']);
    } else {
      await simpleGit(path).fetch(['--prune', '--quiet', 'origin', '+refs/*:refs/*']);
    }
    if (!(await this.has(path, sha))) {
      // Not on any branch: some forges serve unadvertised commits by SHA.
      await simpleGit(path)
        .fetch(['--quiet', 'origin', sha])
        .catch(() => undefined);
    }
    if (!(await this.has(path, sha))) {
      throw new DockhandError('not_found', `commit ${sha} is not in ${repo}`, {
        field: 'baseSha',
        hint: 'push the commit (or pick one that exists on the remote) and send the task again',
      });
    }
    return path;
  }
}

async function isAncestor(git: SimpleGit, ancestor: string, sha: string): Promise<boolean> {
  try {
    await git.raw(['merge-base', '--is-ancestor', ancestor, sha]);
    return true;
  } catch {
    return false;
  }
}

function gitBuffer(cwd: string, args: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd, encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => {
      if (error) reject(error);
      else resolve(stdout);
    });
  });
}
