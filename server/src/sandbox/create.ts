import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Docker from 'dockerode';
import type { Logger } from 'pino';
import { DockerSandboxDriver } from './docker-driver';
import { DependencyCache } from './dep-cache';
import { checkSandboxHost } from './host-check';
import { RepoMirror } from './mirror';
import type { RegistryCredentials } from './private-registries';
import { WarmPool } from './pool';
import { SandboxService } from './service';
import { SnapshotManager, type InstallEgress } from './snapshots';
import type { SandboxLimits } from './types';
import { WorkspaceDisks } from './workspace-disk';

export interface SandboxServiceConfig {
  dataDir: string;
  /** This server instance (labels every container; reconcile keys on it). */
  ownerId: string;
  baseImage?: string;
  warmPoolSize?: number;
  /** Each sandbox's /workspace disk limit in MiB (0: none); default none. */
  diskMiB?: number;
  unsafeRunc?: boolean;
  limits?: Partial<SandboxLimits>;
  installEgress?: InstallEgress;
  registryHosts?: string[];
  /** Hosts an admin lets repositories' egressHosts add (`sandbox.egressHosts`); see SnapshotManagerOptions. */
  fleetEgressHosts?: string[];
  /** Extra CA bundle for dependency installs and toolchain downloads; default the host's bundle when it exists. */
  extraCaBundle?: string;
  /** npm registry for installs and toolchains (Node, npm, pnpm, yarn); default the public one. */
  registry?: string;
  /** The company's Python package index for snapshot builds (`sandbox.pipIndexUrl`). */
  pipIndexUrl?: string;
  /** The node's tarball cache for builds (`dep-cache.ts`): off, or its bound; default on at 4 GiB. */
  dependencyCache?: { enabled: boolean; maxBytes?: number };
  /** Repositories' secrets for their registries (`private-registries.ts`), and where those may be (`sandbox.privateRegistries`). */
  registryCredentials?: RegistryCredentials;
  privateRegistries?: string[];
  docker?: Docker;
  logger?: Logger;
  /** The server's mirror of registered repositories (shared with the API's submission checks). */
  mirror?: RepoMirror;
}

const HOST_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

/**
 * The node's dependency cache as configured (`DOCKHAND_DEP_CACHE`, `DOCKHAND_DEP_CACHE_MAX_GIB`):
 * false when off; undefined when not configured (the snapshot manager's default, on at 4 GiB).
 */
export function nodeDependencyCache(config: SandboxServiceConfig, extraCaBundle: string | undefined): DependencyCache | false | undefined {
  if (config.dependencyCache === undefined) return undefined;
  if (!config.dependencyCache.enabled) return false;
  return new DependencyCache({
    dir: join(config.dataDir, 'dep-cache'),
    ...(config.dependencyCache.maxBytes !== undefined ? { maxBytes: config.dependencyCache.maxBytes } : {}),
    ...(config.registry ? { upstream: config.registry } : {}),
    ...(extraCaBundle ? { caBundle: extraCaBundle } : {}),
    ...(config.logger ? { logger: config.logger } : {}),
  });
}

/** Wires the sandbox layer: host check, driver, mirror, snapshots, pool; starts removing leftovers (not awaited). */
export async function createSandboxService(config: SandboxServiceConfig): Promise<SandboxService> {
  const docker = config.docker ?? new Docker();
  const logger = config.logger;
  const checking = Date.now();
  logger?.info('checking the sandbox host (Docker engine, gVisor runtime)…');
  const host = await checkSandboxHost(docker, { ...(config.unsafeRunc ? { unsafeRunc: true } : {}), ...(logger ? { logger } : {}) });
  logger?.info({ runtime: host.runtime, docker: host.dockerVersion, ms: Date.now() - checking }, 'sandbox host ready');
  const disks = (config.diskMiB ?? 0) > 0 ? new WorkspaceDisks(join(config.dataDir, 'sandbox-disks'), config.diskMiB ?? 0, logger) : undefined;
  const noDisk = await disks?.unavailable();
  if (noDisk) logger?.warn({ reason: noDisk }, `sandboxes get no disk limit (DOCKHAND_SANDBOX_DISK=${config.diskMiB} MiB asked): /workspace writes reach the host disk unbounded`);
  const driver = new DockerSandboxDriver({ docker, ownerId: config.ownerId, runtime: host.runtime, ...(logger ? { logger } : {}), ...(config.limits ? { limits: config.limits } : {}), ...(disks && !noDisk ? { disks } : {}) });
  const mirror = config.mirror ?? new RepoMirror(config.dataDir);
  const extraCaBundle = config.extraCaBundle ?? (existsSync(HOST_CA_BUNDLE) ? HOST_CA_BUNDLE : undefined);
  const egress = config.installEgress ?? (host.egressRuntime ? 'proxy' : 'runc-bridge');
  const dependencyCache = nodeDependencyCache(config, extraCaBundle);
  const snapshots = new SnapshotManager({
    docker,
    mirror,
    dataDir: config.dataDir,
    ...(config.registry ? { registry: config.registry } : {}),
    ...(config.pipIndexUrl ? { pipIndexUrl: config.pipIndexUrl } : {}),
    ownerId: config.ownerId,
    egress,
    ...(config.baseImage ? { baseImage: config.baseImage } : {}),
    ...(config.registryHosts ? { registryHosts: config.registryHosts } : {}),
    ...(config.fleetEgressHosts ? { fleetEgressHosts: config.fleetEgressHosts } : {}),
    ...(extraCaBundle ? { extraCaBundle } : {}),
    ...(dependencyCache !== undefined ? { dependencyCache } : {}),
    ...(config.registryCredentials ? { registryCredentials: config.registryCredentials } : {}),
    ...(config.privateRegistries ? { privateRegistries: config.privateRegistries } : {}),
    ...(logger ? { logger } : {}),
  });
  const pool = (config.warmPoolSize ?? 0) > 0 ? new WarmPool({ driver, size: config.warmPoolSize ?? 0, ...(logger ? { logger } : {}), ...(config.limits ? { limits: config.limits } : {}) }) : undefined;
  const service = new SandboxService({ driver, mirror, snapshots, ...(pool ? { pool } : {}), ...(logger ? { logger } : {}) });
  service.startReconcile();
  return service;
}
