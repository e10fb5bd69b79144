import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import type { Config } from '../config';
import type { Logger } from '../log';
import { checkSandboxHost } from '../sandbox/host-check';
import { createSandboxService } from '../sandbox/create';
import type { DependencyCacheMetrics } from '../sandbox/dep-cache';
import type { RepoMirror } from '../sandbox/mirror';
import type { SandboxService } from '../sandbox/service';
import type { SandboxProvider } from './ports';
import type { RegistryCredentials } from '../sandbox/private-registries';

export interface SandboxSetup {
  provider: SandboxProvider;
  check?: () => Promise<void>;
  /** The node's dependency cache for `/metrics` (undefined when it is off). */
  dependencyCache?: () => Promise<DependencyCacheMetrics | undefined>;
  close: () => Promise<void>;
  /** The `dockhand.owner` label on every container this setup starts (sandboxes and snapshot builds). */
  ownerId?: string;
}

/** The dependency cache's configuration as the sandbox layer takes it (bytes, not GiB). */
export function dependencyCacheSetting(config: Config): { enabled: boolean; maxBytes: number } {
  return { enabled: config.sandbox.depCache.enabled, maxBytes: Math.round(config.sandbox.depCache.maxGiB * 1024 ** 3) };
}

/**
 * The sandbox layer's `SandboxService` (mirror, snapshots, warm pool, gVisor driver) behind the
 * runner's `SandboxProvider`. At start-up it removes containers left by a crashed server, so a
 * task resumed after a restart gets a fresh sandbox with its recorded edits replayed; a task that
 * this same process resumes (lease regained) keeps the sandbox it holds.
 */
export async function createSandboxProvider(config: Config, logger: Logger, options: { mirror?: RepoMirror; registryCredentials?: RegistryCredentials } = {}): Promise<SandboxSetup> {
  const docker = new Docker();
  const ownerId = `server-${randomBytes(4).toString('hex')}`;
  const create = () => createSandboxService({
    dataDir: config.dataDir,
    ownerId,
    baseImage: config.sandbox.image,
    warmPoolSize: config.sandbox.warmPoolSize,
    diskMiB: config.sandbox.diskMiB,
    unsafeRunc: config.sandbox.unsafeRunc,
    ...(config.sandbox.registry ? { registry: config.sandbox.registry } : {}),
    ...(config.sandbox.pipIndexUrl ? { pipIndexUrl: config.sandbox.pipIndexUrl } : {}),
    ...(config.sandbox.extraCaBundle ? { extraCaBundle: config.sandbox.extraCaBundle } : {}),
    fleetEgressHosts: config.sandbox.egressHosts,
    privateRegistries: config.sandbox.privateRegistries,
    ...(options.registryCredentials ? { registryCredentials: options.registryCredentials } : {}),
    dependencyCache: dependencyCacheSetting(config),
    docker,
    logger,
    ...(options.mirror ? { mirror: options.mirror } : {}),
  });
  let service: SandboxService | undefined;
  for (let attempt = 1; !service; attempt++) {
    try {
      service = await create();
    } catch (error) {
      // The start-up reconcile races with Docker removing the same leftover ("removal already in
      // progress", 409); the engine settles within a moment.
      if (attempt >= 5 || !/409|already in progress/.test(String(error))) throw error;
      logger.warn({ err: error, attempt }, 'sandbox start-up reconcile failed; retrying');
      await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
    }
  }
  const provider: SandboxProvider = {
    acquire: async ({ signal: _signal, ...request }) => {
      const acquired = await service.acquire(request);
      return { sandbox: acquired.sandbox, source: acquired.source, startMs: acquired.startMs, snapshotImage: acquired.snapshotImage };
    },
    release: (sandbox) => service.release(sandbox),
  };
  return {
    provider: options.mirror ? mirrorFirst(provider, options.mirror) : provider,
    check: async () => {
      await checkSandboxHost(docker, { unsafeRunc: config.sandbox.unsafeRunc });
    },
    dependencyCache: () => service.dependencyCacheMetrics(),
    close: () => service.shutdown(),
    ownerId,
  };
}

/**
 * The mirror first, with the task's signal: a fetch from a source that hangs dies when the task is
 * cancelled (and with the mirror on shutdown), so it never holds a scheduler slot; the sandbox
 * service's own `ensure` then finds the commit without git work.
 */
export function mirrorFirst(provider: SandboxProvider, mirror: RepoMirror): SandboxProvider {
  // Each method called on `provider` itself: a class instance's methods are on its prototype, which a spread would drop.
  const reattach = provider.reattach;
  return {
    acquire: async (request) => {
      await mirror.ensure(request.repo, request.baseSha, request.signal ? { signal: request.signal } : {});
      return provider.acquire(request);
    },
    release: (sandbox) => provider.release(sandbox),
    ...(reattach ? { reattach: (input: Parameters<typeof reattach>[0]) => reattach.call(provider, input) } : {}),
  };
}
