import { createHash, randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { z } from 'zod';
import { DockhandError } from '../errors';
import { LABELS, ownerLabels } from './docker-driver';
import { DockerSandbox, isNotFound } from './docker-sandbox';
import { DEFAULT_REGISTRY_HOSTS, startEgressProxy, type EgressProxy } from './egress-proxy';
import type { RepoMirror } from './mirror';
import { WORKSPACE } from './paths';
import { checkoutFromBundle } from './workspace';

export const SNAPSHOT_REPOSITORY = 'dockhand/snapshot';
export const SNAPSHOT_LABELS = {
  snapshot: 'dockhand.snapshot',
  fingerprint: 'dockhand.snapshot.fingerprint',
  sha: 'dockhand.snapshot.sha',
} as const;
const EGRESS_NETWORK = 'dockhand-egress';
const CA_PATH_IN_CONTAINER = '/etc/dockhand/extra-ca.crt';

/** Files whose content decides the installed dependencies, at the repository root. */
const LOCKFILE_PATTERNS = [
  /^package-lock\.json$/,
  /^npm-shrinkwrap\.json$/,
  /^pnpm-lock\.yaml$/,
  /^yarn\.lock$/,
  /^requirements.*\.txt$/,
  /^poetry\.lock$/,
  /^Pipfile\.lock$/,
  /^go\.sum$/,
  /^Cargo\.lock$/,
];
const SETUP_SCRIPT = '.dockhand/setup.sh';

/**
 * How the install step reaches the package registries:
 *  - 'proxy' (default): runtime runsc-egress in an --internal Docker network; the only way out is
 *    the allowlist CONNECT proxy on the network's gateway.
 *  - 'runc-bridge': FALLBACK for hosts without runsc-egress: plain runc on the default bridge, full
 *    egress, for the install step only. Logged as a warning on every build.
 *  - 'none': no network; for repos with vendored dependencies or none.
 */
export type InstallEgress = 'proxy' | 'runc-bridge' | 'none';

export interface SnapshotManagerOptions {
  docker: Docker;
  mirror: RepoMirror;
  ownerId: string;
  baseImage?: string;
  /** Image repository snapshots are tagged in (`<repository>:<fingerprint>`). Default dockhand/snapshot. */
  repository?: string;
  egress?: InstallEgress;
  /** Hosts the install step may reach (port 443 only). */
  registryHosts?: string[];
  /** Extra CA bundle for dependency installs (a TLS-intercepting corporate proxy). Mounted read-only. */
  extraCaBundle?: string;
  /** Wall-clock cap for the whole install step. Default 15 min. */
  installTimeoutMs?: number;
  logger?: Logger;
}

export interface Snapshot {
  image: string;
  fingerprint: string;
  /** The commit the image's workspace is at. */
  sha: string;
  /** True when this call built it. */
  built: boolean;
}

const ImageLabels = z.record(z.string(), z.string()).nullish();

/** sha256 over the lockfiles at `sha`, the setup script and the base image id. */
export async function computeFingerprint(mirror: RepoMirror, mirrorPath: string, sha: string, baseImageId: string): Promise<string> {
  const hash = createHash('sha256').update(`base ${baseImageId}\n`);
  const names = (await mirror.rootFiles(mirrorPath, sha)).filter((name) => LOCKFILE_PATTERNS.some((pattern) => pattern.test(name))).sort();
  for (const name of [...names, SETUP_SCRIPT]) {
    const content = await mirror.show(mirrorPath, sha, name);
    if (content === undefined) continue;
    hash.update(`file ${name} ${content.length}\n`).update(content);
  }
  return hash.digest('hex').slice(0, 32);
}

/** The shell script the install step runs in /workspace: one branch per ecosystem found. */
export function installScript(): string {
  return [
    'set -eu',
    // Installed trees must never show up as changes in the task's diff.
    'printf "node_modules/\\n.venv/\\n" >> .git/info/exclude',
    'if [ -f package-lock.json ] || [ -f npm-shrinkwrap.json ]; then npm ci --no-audit --no-fund --loglevel=error',
    'elif [ -f pnpm-lock.yaml ]; then if command -v pnpm >/dev/null; then pnpm install --frozen-lockfile; else echo "pnpm-lock.yaml found but pnpm is not in the base image" >&2; exit 1; fi',
    'elif [ -f yarn.lock ]; then if command -v yarn >/dev/null; then yarn install --frozen-lockfile; else echo "yarn.lock found but yarn is not in the base image" >&2; exit 1; fi',
    'elif [ -f package.json ]; then npm install --no-package-lock --no-audit --no-fund --loglevel=error; fi',
    // A shell glob, not `ls`: coreutils 9's ls fails under this host's gVisor release.
    'for r in requirements*.txt; do [ -f "$r" ] || continue; [ -d .venv ] || python3 -m venv --system-site-packages .venv; .venv/bin/pip install -q -r "$r"; done',
    'if [ -f go.sum ] && command -v go >/dev/null; then go mod download; fi',
    `if [ -f ${SETUP_SCRIPT} ]; then bash ${SETUP_SCRIPT}; fi`,
  ].join('\n');
}

/**
 * Per-repository snapshot images `dockhand/snapshot:<fingerprint>`: the base image plus the repo at
 * a commit in /workspace (owned by uid 1000) with its dependencies installed. Built once per
 * fingerprint; later tasks reuse the image and move the workspace to their own commit.
 */
export class SnapshotManager {
  private readonly docker: Docker;
  private readonly options: SnapshotManagerOptions;
  private readonly inflight = new Map<string, Promise<Snapshot>>();
  /** Number of images this manager built (tests and the benchmark count rebuilds with it). */
  builds = 0;

  constructor(options: SnapshotManagerOptions) {
    this.docker = options.docker;
    this.options = options;
  }

  get repository(): string {
    return this.options.repository ?? SNAPSHOT_REPOSITORY;
  }

  get baseImage(): string {
    return this.options.baseImage ?? 'dockhand/base:latest';
  }

  /** Finds or builds the snapshot for `sha` of the mirrored repo. */
  async resolve(mirrorPath: string, sha: string, options: { rebuild?: boolean } = {}): Promise<Snapshot> {
    const base = await this.docker.getImage(this.baseImage).inspect().catch((error: unknown) => {
      throw new DockhandError('sandbox_unavailable', `base image ${this.baseImage} is missing`, {
        cause: error,
        hint: 'build it with sandbox-images/base/build.sh',
      });
    });
    const fingerprint = await computeFingerprint(this.options.mirror, mirrorPath, sha, base.Id);
    const image = `${this.repository}:${fingerprint}`;
    if (!options.rebuild) {
      const existing = await this.inspect(image);
      if (existing) return { image, fingerprint, sha: existing.sha, built: false };
    }
    const running = this.inflight.get(fingerprint);
    if (running) return running;
    const work = this.build(mirrorPath, sha, fingerprint, image);
    this.inflight.set(fingerprint, work);
    try {
      return await work;
    } finally {
      this.inflight.delete(fingerprint);
    }
  }

  /**
   * Removes this manager's snapshot images (its repository only) older than `maxAgeDays`, always
   * keeping the `keep` newest. Images a container still uses stay.
   */
  async gcSnapshots(options: { maxAgeDays: number; keep: number }): Promise<{ removed: string[] }> {
    const images = await this.docker.listImages({ filters: { label: [SNAPSHOT_LABELS.snapshot], reference: [this.repository] } });
    const sorted = [...images].sort((a, b) => b.Created - a.Created);
    const cutoff = Date.now() / 1000 - options.maxAgeDays * 86_400;
    const removed: string[] = [];
    for (const [index, info] of sorted.entries()) {
      if (index < options.keep || info.Created >= cutoff) continue;
      try {
        await this.docker.getImage(info.Id).remove({ force: false });
        removed.push(...(info.RepoTags ?? [info.Id]));
      } catch (error) {
        // 409: a container still uses it; it goes on a later run.
        this.options.logger?.info({ image: info.Id, error: String(error) }, 'snapshot kept: still in use');
      }
    }
    return { removed };
  }

  private async inspect(image: string): Promise<{ sha: string } | undefined> {
    try {
      const info = await this.docker.getImage(image).inspect();
      const labels = ImageLabels.parse(info.Config?.Labels);
      const sha = labels?.[SNAPSHOT_LABELS.sha];
      return sha ? { sha } : undefined;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  private async build(mirrorPath: string, sha: string, fingerprint: string, image: string): Promise<Snapshot> {
    const logger = this.options.logger;
    const egress = this.options.egress ?? 'proxy';
    const started = Date.now();
    let proxy: EgressProxy | undefined;
    let container: Docker.Container | undefined;
    try {
      const env: string[] = ['HOME=/home/dockhand', 'LANG=C.UTF-8', 'CI=true', `PATH=${WORKSPACE}/.venv/bin:/usr/local/bin:/usr/bin:/bin`,
        // Caches on tmpfs: they would otherwise be committed into every snapshot image.
        'npm_config_cache=/tmp/npm-cache', 'PIP_NO_CACHE_DIR=1'];
      const binds: string[] = [];
      let runtime = 'runsc';
      let networkMode = 'none';
      if (egress === 'proxy') {
        const gateway = await this.egressNetwork();
        proxy = await startEgressProxy({ host: gateway, allow: this.options.registryHosts ?? DEFAULT_REGISTRY_HOSTS, ...(logger ? { logger } : {}) });
        const url = `http://${proxy.host}:${proxy.port}`;
        env.push(`HTTPS_PROXY=${url}`, `https_proxy=${url}`, `npm_config_https_proxy=${url}`, `npm_config_proxy=${url}`);
        runtime = 'runsc-egress';
        networkMode = EGRESS_NETWORK;
      } else if (egress === 'runc-bridge') {
        logger?.warn({ image }, 'FALLBACK: dependency install runs on plain runc with full egress on the default bridge (no runsc-egress)');
        runtime = 'runc';
        networkMode = 'bridge';
      }
      if (this.options.extraCaBundle) {
        binds.push(`${this.options.extraCaBundle}:${CA_PATH_IN_CONTAINER}:ro`);
        env.push(`NODE_EXTRA_CA_CERTS=${CA_PATH_IN_CONTAINER}`, `npm_config_cafile=${CA_PATH_IN_CONTAINER}`, `PIP_CERT=${CA_PATH_IN_CONTAINER}`);
      }
      container = await this.docker.createContainer({
        name: `dockhand-build-${randomBytes(5).toString('hex')}`,
        Image: this.baseImage,
        Cmd: ['sleep', 'infinity'],
        User: '1000:1000',
        WorkingDir: WORKSPACE,
        Env: env,
        Labels: { [LABELS.sandbox]: '1', ...ownerLabels(this.options.ownerId), [LABELS.pool]: 'snapshot-build' },
        HostConfig: {
          Runtime: runtime,
          NetworkMode: networkMode,
          Init: true,
          CapDrop: ['ALL'],
          SecurityOpt: ['no-new-privileges'],
          Binds: binds,
          Memory: 4096 * 1024 * 1024,
          MemorySwap: 4096 * 1024 * 1024,
          PidsLimit: 8192,
          Tmpfs: { '/tmp': 'rw,size=1g' },
        },
      });
      await container.start();
      // The workspace is in the container's own layer (no volume) so that `docker commit` keeps it.
      const builder = new DockerSandbox(this.docker, container, container.id, this.baseImage, sha, {}, 4 * 1024 * 1024, () => undefined);
      const init = await builder.raw(['git', 'init', '-q', WORKSPACE]);
      if (init.exitCode !== 0) throw new DockhandError('internal', `git init failed: ${init.stderr.toString('utf8')}`);
      await checkoutFromBundle(builder, sha, await this.options.mirror.bundle(mirrorPath, sha));
      const install = await builder.raw(['bash', '-c', installScript()], {
        timeoutMs: this.options.installTimeoutMs ?? 15 * 60_000,
        env: Object.fromEntries(env.map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)])),
      });
      if (install.exitCode !== 0) {
        const tail = (install.stdout.toString('utf8') + install.stderr.toString('utf8')).slice(-4000);
        throw new DockhandError('sandbox_unavailable', `dependency install for snapshot ${fingerprint} failed (exit ${install.exitCode}):\n${tail}`, {
          hint: proxy && proxy.refused.length > 0 ? `the egress proxy refused: ${[...new Set(proxy.refused)].join(', ')}` : 'see the install output',
        });
      }
      const status = await builder.workspaceState();
      if (status.head !== sha || !status.clean) {
        throw new DockhandError('sandbox_unavailable', `snapshot workspace is not clean at ${sha} after install:\n${status.status}`, {
          hint: 'add the files the install creates to .gitignore',
        });
      }
      const [repo, tag] = image.split(':');
      await container.commit({
        repo,
        tag,
        pause: true,
        changes: [
          'CMD ["sleep", "infinity"]',
          'USER 1000:1000',
          `WORKDIR ${WORKSPACE}`,
          `LABEL ${SNAPSHOT_LABELS.snapshot}=1 ${SNAPSHOT_LABELS.fingerprint}=${fingerprint} ${SNAPSHOT_LABELS.sha}=${sha}`,
        ].join('\n'),
      });
      this.builds += 1;
      logger?.info({ image, sha, ms: Date.now() - started }, 'snapshot built');
      return { image, fingerprint, sha, built: true };
    } finally {
      await container?.remove({ force: true, v: true }).catch(() => undefined);
      await proxy?.close();
    }
  }

  /** The --internal network install containers join; returns its gateway IP (where the proxy listens). */
  private async egressNetwork(): Promise<string> {
    const read = async (): Promise<string | undefined> => {
      try {
        const info = await this.docker.getNetwork(EGRESS_NETWORK).inspect();
        const parsed = z.object({ IPAM: z.object({ Config: z.array(z.object({ Gateway: z.string().optional() })).nullish() }) }).parse(info);
        return parsed.IPAM.Config?.[0]?.Gateway;
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw error;
      }
    };
    const existing = await read();
    if (existing) return existing;
    await this.docker
      .createNetwork({ Name: EGRESS_NETWORK, Internal: true, CheckDuplicate: true, Labels: { [LABELS.sandbox]: 'network' } })
      .catch((error: unknown) => {
        // Another build created it first.
        if (!(typeof error === 'object' && error !== null && 'statusCode' in error && error.statusCode === 409)) throw error;
      });
    const gateway = await read();
    if (!gateway) throw new DockhandError('sandbox_unavailable', `docker network ${EGRESS_NETWORK} has no gateway address`);
    return gateway;
  }
}
