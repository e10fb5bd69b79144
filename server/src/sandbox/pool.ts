import type { Logger } from 'pino';
import type { DockerSandboxDriver } from './docker-driver';
import { LABELS } from './docker-driver';
import type { DockerSandbox } from './docker-sandbox';
import { DockhandError } from '../errors';
import type { SnapshotIdentity } from './snapshot-labels';
import type { SandboxLimits } from './types';
import { checkoutFromBundle, verifyWorkspace } from './workspace';

export interface WarmPoolOptions {
  driver: DockerSandboxDriver;
  /** Idle sandboxes kept started per hot snapshot. */
  size: number;
  limits?: Partial<SandboxLimits>;
  logger?: Logger;
}

/** What the pool needs of a snapshot: its image, its commit, and whom it belongs to. */
export interface PoolSnapshot {
  image: string;
  sha: string;
  identity?: SnapshotIdentity;
}

interface HotSnapshot {
  image: string;
  sha: string;
  identity: SnapshotIdentity | undefined;
  idle: DockerSandbox[];
  filling: number;
}

/**
 * Started, verified, idle sandboxes per hot snapshot, so a task gets one without waiting for a
 * container start. An idle sandbox has run nothing since it was verified (only the pool holds it),
 * so claiming one at the snapshot's own commit needs no further check. Refills run in the
 * background after each claim. `drain()` destroys every idle sandbox and stops refilling.
 */
export class WarmPool {
  private readonly hot = new Map<string, HotSnapshot>();
  private readonly refills = new Set<Promise<void>>();
  private draining = false;

  constructor(private readonly options: WarmPoolOptions) {}

  /** Marks a snapshot hot and starts filling its pool (returns when the fill is started, not done). */
  warm(snapshot: PoolSnapshot): void {
    if (this.draining || this.options.size <= 0) return;
    const { image, sha } = snapshot;
    let entry = this.hot.get(image);
    if (!entry) {
      entry = { image, sha, identity: snapshot.identity, idle: [], filling: 0 };
      this.hot.set(image, entry);
    }
    this.refill(entry);
  }

  /** Waits until every hot snapshot has its full complement of idle sandboxes (tests, bench). */
  async ready(): Promise<void> {
    while (this.refills.size > 0) await Promise.all([...this.refills]);
  }

  idleCount(image?: string): number {
    if (image) return this.hot.get(image)?.idle.length ?? 0;
    return [...this.hot.values()].reduce((sum, entry) => sum + entry.idle.length, 0);
  }

  /**
   * An idle sandbox of `image` with its workspace at `baseSha`, or undefined when none is idle.
   * A sandbox at another commit is moved with the bundle; if that fails it is destroyed and the
   * error thrown (the caller falls back to a fresh sandbox or fails the task). A sandbox started
   * for another repository or recipe than the request's is never handed out.
   */
  async claim(snapshot: PoolSnapshot, baseSha: string, bundle: () => Promise<Buffer>): Promise<DockerSandbox | undefined> {
    const entry = this.hot.get(snapshot.image);
    if (entry && snapshot.identity && (entry.identity?.repo !== snapshot.identity.repo || entry.identity.recipeHash !== snapshot.identity.recipeHash)) {
      throw new DockhandError(
        'sandbox_unavailable',
        `warm sandboxes of ${snapshot.image} belong to repository "${entry.identity?.repo ?? 'unknown'}" (recipe ${entry.identity?.recipeHash ?? 'unknown'}), not "${snapshot.identity.repo}" (recipe ${snapshot.identity.recipeHash}); refusing the claim`,
      );
    }
    const sandbox = entry?.idle.shift();
    if (!entry || !sandbox) return undefined;
    this.refill(entry);
    if (sandbox.lost) await sandbox.destroy().catch(() => undefined);
    if (sandbox.isDestroyed) return this.claim(snapshot, baseSha, bundle);
    try {
      if (sandbox.baseSha !== baseSha) await checkoutFromBundle(sandbox, baseSha, await bundle());
      this.options.driver.armWallClock(sandbox);
      return sandbox;
    } catch (error) {
      await sandbox.destroy().catch(() => undefined);
      throw error;
    }
  }

  /** Destroys every idle sandbox and stops refilling. Claimed sandboxes belong to their tasks. */
  async drain(): Promise<void> {
    this.draining = true;
    await Promise.all([...this.refills].map((refill) => refill.catch(() => undefined)));
    const idle = [...this.hot.values()].flatMap((entry) => entry.idle.splice(0));
    this.hot.clear();
    await Promise.all(idle.map((sandbox) => sandbox.destroy().catch(() => undefined)));
  }

  private refill(entry: HotSnapshot): void {
    const missing = this.options.size - entry.idle.length - entry.filling;
    for (let index = 0; index < missing; index += 1) {
      entry.filling += 1;
      const work = this.startOne(entry).finally(() => {
        entry.filling -= 1;
        this.refills.delete(work);
      });
      this.refills.add(work);
    }
  }

  private async startOne(entry: HotSnapshot): Promise<void> {
    try {
      const sandbox = await this.options.driver.start({
        image: entry.image,
        baseSha: entry.sha,
        labels: { [LABELS.pool]: entry.image },
        // The wall clock starts when a task claims it, not while it waits idle.
        deferWallClock: true,
        ...(entry.identity ? { snapshot: entry.identity } : {}),
        ...(this.options.limits ? { limits: this.options.limits } : {}),
      });
      try {
        await verifyWorkspace(sandbox, entry.sha);
      } catch (error) {
        await sandbox.destroy().catch(() => undefined);
        throw error;
      }
      if (this.draining || this.hot.get(entry.image) !== entry) {
        await sandbox.destroy();
        return;
      }
      entry.idle.push(sandbox);
    } catch (error) {
      this.options.logger?.warn({ image: entry.image, error: String(error) }, 'warm pool could not start a sandbox');
    }
  }
}
