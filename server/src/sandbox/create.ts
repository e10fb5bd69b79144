import { existsSync } from 'node:fs';
import Docker from 'dockerode';
import type { Logger } from 'pino';
import { DockerSandboxDriver } from './docker-driver';
import { checkSandboxHost } from './host-check';
import { RepoMirror } from './mirror';
import { WarmPool } from './pool';
import { SandboxService } from './service';
import { SnapshotManager, type InstallEgress } from './snapshots';
import type { SandboxLimits } from './types';

export interface SandboxServiceConfig {
  dataDir: string;
  /** This server instance (labels every container; reconcile keys on it). */
  ownerId: string;
  baseImage?: string;
  warmPoolSize?: number;
  unsafeRunc?: boolean;
  limits?: Partial<SandboxLimits>;
  installEgress?: InstallEgress;
  registryHosts?: string[];
  /** Extra CA bundle for dependency installs and toolchain downloads; default the host's bundle when it exists. */
  extraCaBundle?: string;
  /** npm registry for installs and toolchains (Node, npm, pnpm, yarn); default the public one. */
  registry?: string;
  docker?: Docker;
  logger?: Logger;
  /** The server's mirror of registered repositories (shared with the API's submission checks). */
  mirror?: RepoMirror;
}

const HOST_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

/** Wires the sandbox layer: host check, driver, mirror, snapshots, pool; starts removing leftovers (not awaited). */
export async function createSandboxService(config: SandboxServiceConfig): Promise<SandboxService> {
  const docker = config.docker ?? new Docker();
  const logger = config.logger;
  const checking = Date.now();
  logger?.info('checking the sandbox host (Docker engine, gVisor runtime)…');
  const host = await checkSandboxHost(docker, { ...(config.unsafeRunc ? { unsafeRunc: true } : {}), ...(logger ? { logger } : {}) });
  logger?.info({ runtime: host.runtime, docker: host.dockerVersion, ms: Date.now() - checking }, 'sandbox host ready');
  const driver = new DockerSandboxDriver({ docker, ownerId: config.ownerId, runtime: host.runtime, ...(logger ? { logger } : {}), ...(config.limits ? { limits: config.limits } : {}) });
  const mirror = config.mirror ?? new RepoMirror(config.dataDir);
  const extraCaBundle = config.extraCaBundle ?? (existsSync(HOST_CA_BUNDLE) ? HOST_CA_BUNDLE : undefined);
  const egress = config.installEgress ?? (host.egressRuntime ? 'proxy' : 'runc-bridge');
  const snapshots = new SnapshotManager({
    docker,
    mirror,
    dataDir: config.dataDir,
    ...(config.registry ? { registry: config.registry } : {}),
    ownerId: config.ownerId,
    egress,
    ...(config.baseImage ? { baseImage: config.baseImage } : {}),
    ...(config.registryHosts ? { registryHosts: config.registryHosts } : {}),
    ...(extraCaBundle ? { extraCaBundle } : {}),
    ...(logger ? { logger } : {}),
  });
  const pool = (config.warmPoolSize ?? 0) > 0 ? new WarmPool({ driver, size: config.warmPoolSize ?? 0, ...(logger ? { logger } : {}), ...(config.limits ? { limits: config.limits } : {}) }) : undefined;
  const service = new SandboxService({ driver, mirror, snapshots, ...(pool ? { pool } : {}), ...(logger ? { logger } : {}) });
  service.startReconcile();
  return service;
}
