import type { Logger } from 'pino';
import { DockhandError } from '../errors';
import { LABELS, type DockerSandboxDriver } from './docker-driver';
import type { DependencyCacheMetrics } from './dep-cache';
import type { DockerSandbox } from './docker-sandbox';
import type { RepoMirror } from './mirror';
import type { WarmPool } from './pool';
import type { ProgressListener, SnapshotManager } from './snapshots';
import type { Sandbox } from './types';

export type SandboxSource = 'warm_pool' | 'snapshot' | 'cold';

export interface AcquireRequest {
  /** The repository: its registered name (or, for older callers, a local path or remote URL). */
  repo: string;
  baseSha: string;
  taskId: string;
  /** Snapshot build progress (stage, elapsed, last output line) while the task waits. */
  onProgress?: ProgressListener;
}

export interface AcquiredSandbox {
  sandbox: Sandbox;
  /** warm_pool: an idle started sandbox; snapshot: a new container of an existing snapshot; cold: the snapshot was built for this task. */
  source: SandboxSource;
  startMs: number;
  /** Where startMs went: the start-up reconcile wait, the mirror, the snapshot's lookup (or build), the container. */
  steps: { reconcileMs: number; mirrorMs: number; snapshotMs: number; containerMs: number };
  snapshotImage: string;
}

/**
 * What the task runner calls: a sandbox whose workspace is verified to be at the task's base
 * commit, from the warm pool when one is idle, else a fresh container of the repo's snapshot
 * (built first when missing). It owns every sandbox it hands out until `release` or `shutdown`.
 */
export class SandboxService {
  private readonly held = new Map<string, DockerSandbox>();
  private closed = false;
  private reconciling: Promise<unknown> | undefined;

  constructor(
    private readonly parts: {
      driver: DockerSandboxDriver;
      mirror: RepoMirror;
      snapshots: SnapshotManager;
      pool?: WarmPool;
      logger?: Logger;
    },
  ) {}

  /** The node's dependency cache for `/metrics`; undefined when it is off. */
  async dependencyCacheMetrics(): Promise<DependencyCacheMetrics | undefined> {
    return this.parts.snapshots.dependencyCache?.metrics();
  }

  async acquire(request: AcquireRequest): Promise<AcquiredSandbox> {
    if (this.closed) throw new DockhandError('sandbox_unavailable', 'the sandbox service is shutting down');
    const started = Date.now();
    // A container created while the start-up reconcile lists would look like a leftover of ours.
    await this.reconciling;
    const { driver, mirror, snapshots, pool } = this.parts;
    const progress = request.onProgress;
    const reconciledMs = Date.now() - started;
    const mirrorPath = await mirror.ensure(request.repo, request.baseSha);
    const mirroredMs = Date.now() - started;
    const snapshot = await snapshots.resolve({ repo: request.repo, mirrorPath, sha: request.baseSha, ...(progress ? { onProgress: progress } : {}) });
    const resolvedMs = Date.now() - started;
    // A thin bundle on top of the snapshot's commit is enough to move its workspace.
    const bundle = (): Promise<Buffer> => mirror.bundle(mirrorPath, request.baseSha, snapshot.sha);
    let sandbox: DockerSandbox | undefined;
    let source: SandboxSource = snapshot.built ? 'cold' : 'snapshot';
    if (pool) {
      sandbox = await pool.claim(snapshot, request.baseSha, bundle).catch((error: unknown) => {
        this.parts.logger?.warn({ taskId: request.taskId, error: String(error) }, 'warm sandbox could not be moved; starting a fresh one');
        return undefined;
      });
      if (sandbox) source = 'warm_pool';
      pool.warm(snapshot);
    }
    sandbox ??= await driver.create({
      image: snapshot.image,
      baseSha: request.baseSha,
      labels: { [LABELS.task]: request.taskId },
      snapshot: snapshot.identity,
      bundle,
    });
    if (this.closed) {
      await sandbox.destroy();
      throw new DockhandError('sandbox_unavailable', 'the sandbox service is shutting down');
    }
    this.held.set(sandbox.id, sandbox);
    const startMs = Date.now() - started;
    // Where the start went (reconcile wait, mirror, snapshot lookup or build, container): a slow start names its step.
    const steps = { reconcileMs: reconciledMs, mirrorMs: mirroredMs - reconciledMs, snapshotMs: resolvedMs - mirroredMs, containerMs: startMs - resolvedMs };
    this.parts.logger?.info({ taskId: request.taskId, sandbox: sandbox.id, source, startMs, steps }, 'sandbox ready');
    return { sandbox, source, startMs, steps, snapshotImage: snapshot.image };
  }

  async release(sandbox: Sandbox): Promise<void> {
    this.held.delete(sandbox.id);
    await sandbox.destroy();
  }

  /** Removes leftovers of a previous run (crash recovery). Call once at start-up, before `acquire`. */
  async reconcile(): Promise<{ removed: string[] }> {
    return this.parts.driver.reconcile();
  }

  /**
   * The start-up reconcile without waiting for it (removing many leftover gVisor containers takes
   * minutes under load, and the server should listen meanwhile); `acquire` and `shutdown` wait for
   * it. A failure is logged: the leftovers stay until the next start.
   */
  startReconcile(): void {
    this.reconciling ??= this.parts.driver.reconcile().catch((error: unknown) => {
      this.parts.logger?.warn({ err: error }, 'start-up reconcile failed; leftover sandbox containers stay until the next start');
    });
  }

  /**
   * Drains the pool, destroys every sandbox handed out and closes the node's dependency cache (its
   * build listeners and upstream connections); nothing of ours keeps running.
   */
  async shutdown(): Promise<void> {
    this.closed = true;
    await this.reconciling;
    await this.parts.pool?.drain();
    await Promise.all([...this.held.values()].map((sandbox) => sandbox.destroy().catch(() => undefined)));
    this.held.clear();
    await this.parts.driver.destroyAll();
    await this.parts.snapshots.dependencyCache?.close();
  }
}
