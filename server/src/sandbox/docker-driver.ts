import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { DockhandError } from '../errors';
import { processAlive } from '../process-alive';
import { DockerSandbox, describeExit, isNotFound } from './docker-sandbox';
import { SANDBOX_HOME, SANDBOX_PATH } from './environment';
import type { SandboxRuntime } from './host-check';
import { WORKSPACE } from './paths';
import { checkSnapshotLabels, type SnapshotIdentity } from './snapshot-labels';
import { toolchainPath } from './toolchains';
import type { CreateSandboxOptions, Sandbox, SandboxDriver, SandboxLimits } from './types';
import { checkoutFromBundle } from './workspace';
import { imageLayers, type WorkspaceDisk, type WorkspaceDisks } from './workspace-disk';

/** Label keys on every container we create; `reconcile()` finds orphans by them. */
export const LABELS = {
  sandbox: 'dockhand.sandbox',
  owner: 'dockhand.owner',
  /** Host name and pid of the owning server process: reconcile tells a crashed owner from a live one. */
  ownerHost: 'dockhand.owner.host',
  ownerPid: 'dockhand.owner.pid',
  task: 'dockhand.task',
  pool: 'dockhand.pool',
  deadline: 'dockhand.deadline',
} as const;

/** Node 18's npm aborts at start-up below about 1 GiB of container memory under gVisor. */
export const DEFAULT_LIMITS: SandboxLimits = { cpus: 1, memoryMiB: 2048, pids: 256, wallClockSeconds: 3600 };

export interface DockerSandboxDriverOptions {
  docker: Docker;
  /** This server instance; written to `dockhand.owner` on every container. */
  ownerId: string;
  /** From `checkSandboxHost`. */
  runtime: SandboxRuntime;
  logger?: Logger;
  limits?: Partial<SandboxLimits>;
  /** A disk limit for each sandbox's /workspace (`workspace-disk.ts`); none without. */
  disks?: WorkspaceDisks;
}

export interface DriverStartOptions extends CreateSandboxOptions {
  /** Do not start the wall-clock limit yet (warm pool); call `armWallClock` when handing it out. */
  deferWallClock?: boolean;
  /**
   * The repository and recipe the sandbox is for: the image's snapshot labels must say the same
   * (else the start is refused), its toolchains are mounted read-only and first on PATH, and its
   * recipe becomes `sandbox.environment`.
   */
  snapshot?: SnapshotIdentity;
}


export interface DriverCreateOptions extends DriverStartOptions {
  /** A git bundle holding baseSha, for when the image's workspace is at another commit. */
  bundle?: () => Promise<Buffer>;
}

/**
 * Sandboxes as gVisor containers: no network, uid 1000, every capability dropped, no new
 * privileges. /workspace is the image's own directory in the container's copy-on-write layer: an
 * anonymous volume made Docker copy the snapshot's whole workspace (node_modules included) at
 * every create, 10 s for 6k files and 40–96 s for a 532-package tree under load (README,
 * Decisions). The root file system is therefore writable, but uid 1000 owns nothing outside
 * /workspace and HOME, and every world-writable directory of the image (/tmp, /var/tmp, /run/lock,
 * /dev/shm) is a tmpfs, so /workspace is the only place a sandbox's writes reach the host's disk,
 * as with the volume. The layer goes with the container on destroy.
 */
export class DockerSandboxDriver implements SandboxDriver {
  readonly docker: Docker;
  readonly ownerId: string;
  readonly runtime: SandboxRuntime;
  private readonly logger: Logger | undefined;
  private readonly limits: SandboxLimits;
  private readonly live = new Map<string, DockerSandbox>();
  private readonly disks: WorkspaceDisks | undefined;
  private diskWarned = false;

  constructor(options: DockerSandboxDriverOptions) {
    this.disks = options.disks;
    this.docker = options.docker;
    this.ownerId = options.ownerId;
    this.runtime = options.runtime;
    this.logger = options.logger;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
  }

  /** Containers this driver created and has not destroyed. */
  get liveSandboxes(): ReadonlyMap<string, DockerSandbox> {
    return this.live;
  }

  async create(opts: DriverCreateOptions): Promise<DockerSandbox> {
    const { sandbox, snapshotSha } = await this.startContainer(opts);
    try {
      // A snapshot's build checked its workspace clean at the commit its label names just before
      // `docker commit`, and an image does not change: a container of it at that commit needs no
      // check (one gVisor exec less per start, 0.3-1 s under load).
      if (snapshotSha !== undefined && snapshotSha === opts.baseSha) return sandbox;
      const state = await sandbox.workspaceState();
      if (state.head !== opts.baseSha) {
        if (!opts.bundle) {
          throw new DockhandError('sandbox_unavailable', `image ${opts.image} has its workspace at ${state.head || 'no commit'}, not ${opts.baseSha}, and no bundle was given to move it`);
        }
        await checkoutFromBundle(sandbox, opts.baseSha, await opts.bundle());
      } else if (!state.clean) {
        throw new DockhandError('sandbox_unavailable', `workspace of image ${opts.image} is not clean:\n${state.status}`);
      }
      return sandbox;
    } catch (error) {
      await sandbox.destroy().catch(() => undefined);
      throw error;
    }
  }

  /** Creates and starts the container without checking the workspace (the pool checks later). */
  async start(opts: DriverStartOptions): Promise<DockerSandbox> {
    return (await this.startContainer(opts)).sandbox;
  }

  /** `start`, and the commit a snapshot image's label says its workspace is at (its labels checked). */
  private async startContainer(opts: DriverStartOptions): Promise<{ sandbox: DockerSandbox; snapshotSha?: string }> {
    const limits = { ...this.limits, ...opts.limits };
    const name = `dockhand-${randomBytes(6).toString('hex')}`;
    const deadline = Date.now() + limits.wallClockSeconds * 1000;
    if (opts.network === 'package-mirror') {
      // Task sandboxes never get egress: only the snapshot builder's install step does.
      throw new DockhandError('forbidden', 'task sandboxes have no network; dependency installs happen when the snapshot is built');
    }
    const memory = limits.memoryMiB * 1024 * 1024;
    const snapshot = opts.snapshot;
    let snapshotSha: string | undefined;
    const info = snapshot || this.disks ? await this.docker.getImage(opts.image).inspect() : undefined;
    if (snapshot) snapshotSha = checkSnapshotLabels(opts.image, info?.Config?.Labels, snapshot).sha;
    const env = { ...opts.env, ...(snapshot && snapshot.toolchains.length > 0 ? { PATH: toolchainPath(snapshot.toolchains, SANDBOX_PATH) } : {}) };
    const toolchainMounts = (snapshot?.toolchains ?? []).map((tool) => ({ Type: 'bind' as const, Source: tool.hostPath, Target: tool.target, ReadOnly: true }));
    const disk = await this.workspaceDisk(name, info?.GraphDriver);
    const diskMounts = disk ? [{ Type: 'bind' as const, Source: disk.path, Target: WORKSPACE }] : [];
    const container = await this.docker.createContainer({
      name,
      Image: opts.image,
      Cmd: ['sleep', 'infinity'],
      User: '1000:1000',
      WorkingDir: WORKSPACE,
      Env: [],
      Labels: {
        ...opts.labels,
        [LABELS.sandbox]: '1',
        ...ownerLabels(this.ownerId),
        [LABELS.deadline]: opts.deferWallClock ? '0' : String(deadline),
      },
      // Network mode none (loopback only; runsc itself runs with --network=none), not
      // NetworkDisabled: that leaves /etc/hosts empty, and tools that bind or dial "localhost"
      // (vitest, vite, jest workers) fail with EAI_AGAIN.
      HostConfig: {
        Runtime: this.runtime,
        NetworkMode: 'none',
        // tini as PID 1 reaps orphans, so killed process trees do not linger as zombies.
        Init: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        ReadonlyRootfs: false,
        // `exec` spelled out: Docker's tmpfs is noexec otherwise, and tools run programs they write
        // there (yarn berry's binaries folder under /tmp: census arcanis/typanion's `mocha` was
        // "permission denied", exit 128; npx's cache under $HOME).
        Tmpfs: {
          '/tmp': 'rw,exec,nosuid,nodev,size=512m',
          '/var/tmp': 'rw,exec,nosuid,nodev,size=64m',
          '/run/lock': 'rw,nosuid,nodev,size=1m',
          [SANDBOX_HOME]: 'rw,exec,nosuid,nodev,size=256m,uid=1000,gid=1000,mode=0700',
        },
        Mounts: [...toolchainMounts, ...diskMounts],
        NanoCpus: Math.round(limits.cpus * 1e9),
        Memory: memory,
        MemorySwap: memory,
        // Under gVisor the host pids cgroup counts the sentry's own threads, which grow with blocked
        // tasks: a tight cgroup limit kills the whole sandbox (seen: `setsid -w` at 64). Processes
        // are capped inside the sandbox kernel by RLIMIT_NPROC instead; the cgroup is a backstop.
        PidsLimit: this.runtime === 'runsc' ? Math.max(4096, limits.pids * 16) : limits.pids,
        Ulimits: [{ Name: 'nproc', Soft: limits.pids, Hard: limits.pids }],
        AutoRemove: false,
      },
    }).catch(async (error: unknown) => {
      await disk?.release().catch(() => undefined);
      throw error;
    });
    const sandbox = new DockerSandbox(this.docker, container, container.id, opts.image, opts.baseSha, env, memory, (gone) => {
      this.live.delete(gone.id);
    });
    if (snapshot) sandbox.environment = snapshot.environment;
    if (disk) {
      sandbox.diskLimitMiB = this.disks?.sizeMiB;
      sandbox.addFinalizer(() => disk.release());
    }
    this.live.set(container.id, sandbox);
    try {
      await container.start();
    } catch (error) {
      await sandbox.destroy().catch(() => undefined);
      throw new DockhandError('sandbox_unavailable', `sandbox container failed to start from ${opts.image}`, { cause: error });
    }
    if (!opts.deferWallClock) this.armWallClock(sandbox, limits.wallClockSeconds);
    this.watch(sandbox, container);
    return snapshotSha === undefined ? { sandbox } : { sandbox, snapshotSha };
  }

  /**
   * Notices a sandbox whose container ends without our destroy() (a fork storm that took the
   * gVisor sentry past the host's process limit, the memory cgroup, `docker rm -f` from outside):
   * one long-poll `wait` per container, so the loss is known within moments, not at the next call.
   */
  private watch(sandbox: DockerSandbox, container: Docker.Container): void {
    const lost = (reason: string): void => {
      if (sandbox.isDestroyed) return;
      this.logger?.warn({ sandbox: sandbox.id, reason }, 'sandbox lost');
      sandbox.markLost(reason);
    };
    const wait = (attempt: number): void => {
      container.wait().then(
        async () => {
          if (sandbox.isDestroyed) return;
          const state = await container.inspect().then((info) => info.State, () => undefined);
          lost(state ? describeExit(state) : 'its container was removed');
        },
        async (error: unknown) => {
          if (sandbox.isDestroyed) return;
          if (isNotFound(error)) return lost('its container was removed');
          // The engine connection dropped: look again, then wait again while the container runs.
          const state = await container.inspect().then((info) => info.State, (inspectError: unknown) => (isNotFound(inspectError) ? null : undefined));
          if (state === null) return lost('its container was removed');
          if (state && !state.Running) return lost(describeExit(state));
          if (attempt < 20) setTimeout(() => wait(attempt + 1), 1000).unref();
        },
      );
    };
    wait(0);
  }

  /** The sandbox's workspace disk, when disks are configured and this host and image allow one. */
  private async workspaceDisk(name: string, graphDriver: unknown): Promise<WorkspaceDisk | undefined> {
    if (!this.disks) return undefined;
    const unavailable = (await this.disks.unavailable()) ?? (imageLayers(graphDriver) ? undefined : 'the engine does not store images with overlay2');
    if (unavailable) {
      if (!this.diskWarned) this.logger?.warn({ reason: unavailable }, 'sandboxes have no disk limit: /workspace writes reach the host disk unbounded');
      this.diskWarned = true;
      return undefined;
    }
    return this.disks.mount(name, imageLayers(graphDriver) ?? []);
  }

  /** Starts the wall-clock limit: the sandbox is destroyed when it runs out, whatever it is doing. */
  armWallClock(sandbox: DockerSandbox, seconds = this.limits.wallClockSeconds): void {
    const timer = setTimeout(() => {
      this.logger?.warn({ sandbox: sandbox.id, wallClockSeconds: seconds }, 'sandbox reached its wall-clock limit; destroying it');
      void sandbox.destroy().catch(() => undefined);
    }, seconds * 1000);
    timer.unref();
    sandbox.addDisposer(() => clearTimeout(timer));
  }

  /**
   * Removes labelled containers no live owner holds: ours that this driver does not hold (a
   * previous run with the same owner id), those past their wall-clock deadline, and those whose
   * owning server process on this host is gone (a crash). Containers of other live servers and of
   * other hosts sharing the engine are left alone, so concurrent servers (and test runs) do not
   * remove each other's sandboxes.
   */
  async reconcile(): Promise<{ removed: string[] }> {
    const containers = await this.docker.listContainers({ all: true, filters: { label: [LABELS.sandbox] } });
    const orphans = containers.filter((info) => !this.live.has(info.Id) && isOrphan(info.Labels ?? {}, this.ownerId));
    if (orphans.length > 0) this.logger?.info({ leftovers: orphans.length, labelled: containers.length }, `reconciling ${orphans.length} leftover sandbox containers…`);
    const removed: string[] = [];
    for (const info of orphans) {
      if (this.live.has(info.Id)) continue;
      try {
        await this.docker.getContainer(info.Id).remove({ force: true, v: true });
        removed.push(info.Id);
      } catch (error) {
        // Gone already, or another reconcile is removing it (409 "removal already in progress").
        if (!isNotFound(error) && !isConflict(error)) throw error;
      }
    }
    if (removed.length > 0) this.logger?.info({ removed }, 'reconcile removed orphaned sandbox containers');
    // Disks of containers that are gone (removed above, or a crashed server's removed by hand).
    await this.disks?.sweep((name) => this.docker.getContainer(name).inspect().then(() => true, (error: unknown) => !isNotFound(error)));
    return { removed };
  }

  /** Destroys every sandbox this driver still holds (shutdown). */
  async destroyAll(): Promise<void> {
    await Promise.all([...this.live.values()].map((sandbox) => sandbox.destroy().catch(() => undefined)));
  }
}

export type { Sandbox };

/** The labels that tie a container to this server process. */
export function ownerLabels(ownerId: string): Record<string, string> {
  return { [LABELS.owner]: ownerId, [LABELS.ownerHost]: hostname(), [LABELS.ownerPid]: String(process.pid) };
}

export function isOrphan(labels: Record<string, string>, ownerId: string, now = Date.now()): boolean {
  if (labels[LABELS.owner] === ownerId) return true;
  const deadline = Number(labels[LABELS.deadline] ?? 0);
  if (deadline > 0 && deadline < now) return true;
  const host = labels[LABELS.ownerHost];
  const pid = Number(labels[LABELS.ownerPid] ?? Number.NaN);
  if (host === undefined || !Number.isInteger(pid)) return true;
  return host === hostname() && !processAlive(pid);
}

function isConflict(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'statusCode' in error && error.statusCode === 409;
}
