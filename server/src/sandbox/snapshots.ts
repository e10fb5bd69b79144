import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFile, chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import { EnvironmentRecipe } from '@dockhand/protocol';
import { z } from 'zod';
import { DockhandError } from '../errors';
import { DependencyCache, describeCacheStats, type DependencyCacheListener } from './dep-cache';
import { pipThroughFront } from './dep-cache-pip';
import { yarnThroughFront } from './dep-cache-yarn';
import { describeRefusals, resolveBuildRegistries, type PrivateRegistry, type RegistryCredentials } from './private-registries';
import { describeSecretUses, secretUses, type SecretUse } from './dep-cache-private';
import { resolveSetupSecrets } from './setup-secrets';
import { LABELS } from './docker-driver';
import { isNotFound } from './docker-sandbox';
import { ensureBuildNetwork, openBuildPort, BUILD_NETWORK } from './build-network';
import { DEFAULT_REGISTRY_HOSTS, startEgressProxy, withinAllowlist, type EgressProxy } from './egress-proxy';
import type { RepoMirror } from './mirror';
import { workspaceOrigin, type WorkspaceOrigin } from './workspace';
import { workflowFiles, WORKFLOW_DIR } from './node-ci';
import { TEST_REQUIREMENT_FILES } from './python-install';
import { canonicalJson, detectRecipe, DEFAULT_NPM_RANGE, RECIPE_FILES, recipeToolchains, REQUIREMENTS_PATTERN, SETUP_SCRIPT_PATH, TOOLCHAIN_PACKAGES, type RecipeInput, type ToolchainName } from './recipe';
import { buildSnapshotImage, SnapshotBuildFailed, usesDependencyCache, type ProgressListener, type SnapshotProgress } from './snapshot-build';
import { checkSnapshotLabels, readSnapshotLabels, SNAPSHOT_KEY_VERSION, SNAPSHOT_LABELS, type SnapshotIdentity } from './snapshot-labels';
import { toolchainComplete, ToolchainStore } from './toolchains';
import { newestSatisfying } from './versions';

const run = promisify(execFile);

export { SNAPSHOT_LABELS } from './snapshot-labels';
export type { ProgressListener, SnapshotProgress } from './snapshot-build';

export const SNAPSHOT_REPOSITORY = 'dockhand/snapshot';

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
/** What decides the dependencies when there is no lockfile (and the project files pip installs from). */
const MANIFESTS = ['package.json', 'pyproject.toml', 'setup.py', 'setup.cfg'];

/**
 * How the install step reaches the package registries:
 *  - 'proxy' (default): runtime runsc-egress in an --internal Docker network whose traffic to the
 *    host is dropped except the server's ports for the build (`build-network.ts`); the only way
 *    out is the allowlist CONNECT proxy on the network's gateway.
 *  - 'runc-bridge': FALLBACK for hosts without runsc-egress: plain runc on the default bridge, full
 *    egress, for the install step only. Logged as a warning on every build.
 *  - 'none': no network; for repos with vendored dependencies or none.
 */
export type InstallEgress = 'proxy' | 'runc-bridge' | 'none';

export interface SnapshotManagerOptions {
  docker: Docker;
  mirror: RepoMirror;
  /** The server's data directory: toolchains (`toolchains/`) and build logs (`snapshot-logs/`) live under it. */
  dataDir: string;
  ownerId: string;
  baseImage?: string;
  /** Image repository snapshots are tagged in (`<repository>:<key>`). Default dockhand/snapshot. */
  repository?: string;
  egress?: InstallEgress;
  /** Hosts the install step may reach (port 443 only), besides a recipe's egressHosts. */
  registryHosts?: string[];
  /**
   * What an admin lets repositories add (hosts or "*.domain"): a recipe's egressHosts outside
   * these are not allowed (a repository narrows the fleet's allowlist, never widens it). Default none.
   */
  fleetEgressHosts?: string[];
  /** npm registry URL for installs and toolchains (default: the public registry). Its host is allowed. */
  registry?: string;
  /** The company's Python package index for builds (`DOCKHAND_PIP_INDEX_URL`); its host is allowed. Absent: pip uses no index. */
  pipIndexUrl?: string;
  /** Extra CA bundle for dependency installs (a TLS-intercepting corporate proxy). Mounted read-only. */
  extraCaBundle?: string;
  /** Wall-clock cap for the whole install step. Default 15 min. */
  installTimeoutMs?: number;
  /** Where toolchains are unpacked (default: a store under the mirror's data directory). */
  toolchains?: ToolchainStore;
  /** Build logs and failed-build records; default `<dataDir>/snapshot-logs`. */
  logDir?: string;
  /** The node's npm/pnpm tarball cache for builds under the proxy (`dep-cache.ts`); default one under `<dataDir>/dep-cache`; false: none. */
  dependencyCache?: DependencyCache | false;
  /** A repository's secrets for its registries' credentials (`private-registries.ts`); absent: a recipe naming registries fails. */
  registryCredentials?: RegistryCredentials;
  /** URL prefixes repositories' registries may be under (`DOCKHAND_PRIVATE_REGISTRIES`); default none. */
  privateRegistries?: string[];
  logger?: Logger;
}

export interface Snapshot {
  image: string;
  /** The snapshot key (the image tag). */
  key: string;
  /** The commit the image's workspace is at. */
  sha: string;
  /** True when this call built it. */
  built: boolean;
  /** Repository, recipe, recipe hash and toolchains: what the driver and the pool check and mount. */
  identity: SnapshotIdentity;
  environment: EnvironmentRecipe;
}

export interface ResolveRequest {
  /** The repository identity (opaque; the registered name). */
  repo: string;
  mirrorPath: string;
  sha: string;
  /** Build again even when the image exists or the last build of this key failed. */
  rebuild?: boolean;
  onProgress?: ProgressListener;
}

const FailedBuild = z.object({ message: z.string(), hint: z.string().optional(), logPath: z.string() });

/** The root commits of `sha`'s history: what identifies a repository whatever it is called. */
/**
 * Can `path` exist at the commit whose top-level names are `rootFiles`? Asking git only for those
 * saves a process per absent file on every acquire (each `git show` is 0.1-0.3 s on a loaded host).
 */
function inRoot(rootFiles: string[], path: string): boolean {
  return rootFiles.includes(path.split('/')[0] ?? path);
}

/** The mirror's HEAD branch: the source's default branch (the mirror's HEAD follows it); undefined when unknown. */
async function defaultBranch(mirrorPath: string): Promise<string | undefined> {
  const read = await run('git', ['symbolic-ref', '--short', 'HEAD'], { cwd: mirrorPath, timeout: 30_000 }).catch(() => undefined);
  return read?.stdout.trim() || undefined;
}

function originOf(repo: string, branch: string | undefined): { origin?: WorkspaceOrigin } {
  const origin = workspaceOrigin(repo, branch);
  return origin ? { origin } : {};
}

async function rootCommits(mirrorPath: string, sha: string): Promise<string[]> {
  const { stdout } = await run('git', ['rev-list', '--max-parents=0', sha], { cwd: mirrorPath, timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
  return stdout.split('\n').filter((line) => line !== '').sort();
}

/** sha256 (16 hex) of the recipe's canonical JSON: the `dockhand.snapshot.recipe` label. */
export function recipeHash(recipe: EnvironmentRecipe): string {
  return createHash('sha256').update(canonicalJson(recipe)).digest('hex').slice(0, 16);
}

/**
 * A commit's top-level names, its CI workflows' paths and the files that decide its recipe and key
 * (one ls-tree, one more for `.github/workflows` when `.github` exists, one cat-file --batch).
 */
export interface RecipeInputs {
  rootFiles: string[];
  /** `.github/workflows/*.yml|yaml` at the commit (node-ci.ts `workflowFiles`). */
  workflowFiles: string[];
  files: Map<string, Buffer | undefined>;
}

/** The lockfiles at the root, and the manifests too when there is no lockfile (or only requirements files). */
function keyFiles(rootFiles: string[]): string[] {
  const lockfiles = rootFiles.filter((name) => LOCKFILE_PATTERNS.some((pattern) => pattern.test(name))).sort();
  const manifests = lockfiles.some((name) => !REQUIREMENTS_PATTERN.test(name)) ? [] : MANIFESTS;
  return [...lockfiles, ...manifests, ...TEST_REQUIREMENT_FILES, SETUP_SCRIPT_PATH].filter((name) => inRoot(rootFiles, name));
}

/** Names the recipe is detected from (those whose top-level entry exists). */
function recipeFiles(rootFiles: string[], workflows: string[]): string[] {
  return [...RECIPE_FILES, ...rootFiles.filter((name) => REQUIREMENTS_PATTERN.test(name)), ...workflows].filter((name) => inRoot(rootFiles, name));
}

export async function readRecipeInputs(mirror: RepoMirror, mirrorPath: string, sha: string): Promise<RecipeInputs> {
  const rootFiles = await mirror.rootFiles(mirrorPath, sha);
  const workflows = inRoot(rootFiles, WORKFLOW_DIR) ? workflowFiles(await mirror.filesIn(mirrorPath, sha, WORKFLOW_DIR)) : [];
  const files = await mirror.showMany(mirrorPath, sha, [...recipeFiles(rootFiles, workflows), ...keyFiles(rootFiles)]);
  return { rootFiles, workflowFiles: workflows, files };
}

/** What detection reads (recipe.ts `detectRecipe`): the recipe files' text from a commit's inputs. */
export function recipeInputOf(repo: string, inputs: RecipeInputs): RecipeInput {
  const files: Record<string, string> = {};
  for (const name of recipeFiles(inputs.rootFiles, inputs.workflowFiles)) {
    const content = inputs.files.get(name);
    if (content !== undefined) files[name] = content.toString('utf8');
  }
  return { repo, rootFiles: inputs.rootFiles, files };
}

/**
 * The snapshot key: sha256 over the key version, the repository identity (its name and its root
 * commits, so two servers' repositories of one name never share), the recipe, the toolchain
 * versions, the lockfiles (the manifests too when there is none), setup.sh and the base image.
 */
export async function computeSnapshotKey(input: {
  mirrorPath: string;
  sha: string;
  identity: SnapshotIdentity;
  baseImageId: string;
  /** The commit's files (readRecipeInputs). */
  inputs: RecipeInputs;
}): Promise<string> {
  const { mirrorPath, sha, identity, inputs } = input;
  const roots = await rootCommits(mirrorPath, sha);
  const hash = createHash('sha256')
    .update(`key ${SNAPSHOT_KEY_VERSION}\n`)
    .update(`repo ${JSON.stringify(identity.repo)}\n`)
    .update(`roots ${roots.join(' ')}\n`)
    .update(`recipe ${canonicalJson(identity.environment)}\n`)
    .update(`toolchains ${identity.toolchains.map((tool) => `${tool.name}@${tool.version}`).join(' ')}\n`)
    .update(`base ${input.baseImageId}\n`);
  for (const name of keyFiles(inputs.rootFiles)) {
    const content = inputs.files.get(name);
    if (content === undefined) continue;
    hash.update(`file ${name} ${content.length}\n`).update(content);
  }
  return hash.digest('hex').slice(0, 32);
}

/**
 * What the lookup of one (repository, commit, base image) found. A commit's files never change,
 * so the answer holds until the registry's version lists are refreshed (a newer Node may then
 * satisfy the recipe) or a toolchain it names is gone; kept in memory and under
 * `<dataDir>/snapshot-index/`, so a start from an existing snapshot runs no git and reads no
 * version list (each git spawn is 5-300 ms depending on load; F10 in test/corpus/FINDINGS.md).
 */
interface Lookup {
  key: string;
  identity: SnapshotIdentity;
  at: number;
}

/** The `recipe` progress: the detected environment, and a line naming the toolchains and commands. */
function recipeProgress(environment: EnvironmentRecipe): SnapshotProgress {
  const tools = [environment.node ? `node ${environment.node.version}` : '', environment.packageManager ? `${environment.packageManager.name} ${environment.packageManager.version}` : '', environment.python ? 'python3' : ''];
  const line = `${tools.filter(Boolean).join(', ') || 'no toolchain'}; install: ${environment.install.command}; test: ${environment.test.command}`;
  return { stage: 'recipe', elapsedMs: 0, line: line.slice(0, 2000), environment };
}

/** Bumped whenever detection or the key's inputs change: older entries are then looked up afresh. */
const LOOKUP_FORMAT = `lookup-12 key-${SNAPSHOT_KEY_VERSION}`;
const LOOKUP_TTL_MS = 12 * 3600_000;

const StoredLookup = z.object({
  key: z.string().regex(/^[0-9a-f]{32}$/),
  at: z.number(),
  identity: z.object({
    repo: z.string(),
    recipeHash: z.string(),
    environment: EnvironmentRecipe,
    toolchains: z.array(z.object({ name: z.enum(Object.keys(TOOLCHAIN_PACKAGES) as [ToolchainName, ...ToolchainName[]]), version: z.string(), hostPath: z.string(), target: z.string(), binDir: z.string() })),
  }),
});

/**
 * Per-repository snapshot images `dockhand/snapshot:<key>`: the base image plus the repo at a
 * commit in /workspace (owned by uid 1000) with its dependencies installed by its recipe, the
 * recipe's toolchains mounted. Built once per key; later tasks reuse the image and move the
 * workspace to their own commit. A failed build keeps its log and is not retried for the same
 * key until `rebuild` (each request fails fast with the same message).
 */
export class SnapshotManager {
  private readonly docker: Docker;
  private readonly options: SnapshotManagerOptions;
  private readonly inflight = new Map<string, Promise<Snapshot>>();
  private readonly lookups = new Map<string, Lookup>();
  readonly toolchains: ToolchainStore;
  private readonly logDir: string;
  /** Number of images this manager built (tests and the benchmark count rebuilds with it). */
  builds = 0;
  /** Shared by every build of this node; its `stats` count hits and misses over all of them. */
  readonly dependencyCache: DependencyCache | undefined;

  constructor(options: SnapshotManagerOptions) {
    this.docker = options.docker;
    this.options = options;
    this.toolchains =
      options.toolchains ??
      new ToolchainStore({
        dataDir: options.dataDir,
        ...(options.registry ? { registry: options.registry } : {}),
        ...(options.extraCaBundle ? { caBundle: options.extraCaBundle } : {}),
        ...(options.logger ? { logger: options.logger } : {}),
      });
    this.logDir = options.logDir ?? join(options.dataDir, 'snapshot-logs');
    this.dependencyCache =
      options.dependencyCache === false
        ? undefined
        : (options.dependencyCache ??
          new DependencyCache({
            dir: join(options.dataDir, 'dep-cache'),
            ...(options.registry ? { upstream: options.registry } : {}),
            ...(options.extraCaBundle ? { caBundle: options.extraCaBundle } : {}),
            ...(options.logger ? { logger: options.logger } : {}),
          }));
  }

  get repository(): string {
    return this.options.repository ?? SNAPSHOT_REPOSITORY;
  }

  get baseImage(): string {
    return this.options.baseImage ?? 'dockhand/base:latest';
  }

  /** The recipe for the repository at `sha` (detection + .dockhand/environment.yml), with its toolchains fetched. */
  async environment(repo: string, inputs: RecipeInputs, onProgress?: ProgressListener): Promise<SnapshotIdentity> {
    const versions = (name: string): Promise<string[]> => this.toolchains.versions(name);
    // The package manager's own engines.node are checked against the Node before anything is fetched.
    const environment = await detectRecipe(recipeInputOf(repo, inputs), versions, (name, version) => this.toolchains.nodeEngines(name, version));
    // What was chosen and from where, whatever happens next (a failed fetch or build still shows it).
    onProgress?.(recipeProgress(environment));
    const npmVersion = environment.node ? newestSatisfying(await versions(TOOLCHAIN_PACKAGES.npm), DEFAULT_NPM_RANGE) : undefined;
    const wanted = recipeToolchains(environment, npmVersion);
    const started = Date.now();
    const missing = wanted.filter((tool) => !toolchainComplete(this.toolchains.mountOf(tool.name, tool.version).hostPath));
    if (missing.length > 0) onProgress?.({ stage: 'toolchain', elapsedMs: 0, line: `fetching ${missing.map((tool) => `${TOOLCHAIN_PACKAGES[tool.name]}@${tool.version}`).join(', ')}` });
    const toolchains = await Promise.all(wanted.map((tool) => this.toolchains.ensure(tool.name, tool.version)));
    if (missing.length > 0) onProgress?.({ stage: 'toolchain', elapsedMs: Date.now() - started, line: 'toolchains ready' });
    return { repo, recipeHash: recipeHash(environment), environment, toolchains };
  }

  /** The snapshot key and identity of `repo` at `sha` on this base image: from the lookup cache, else read from the mirror. */
  async lookup(request: ResolveRequest, baseImageId: string): Promise<{ key: string; identity: SnapshotIdentity; cached: boolean }> {
    const id = createHash('sha256').update(`${LOOKUP_FORMAT}\0${request.repo}\0${request.sha}\0${baseImageId}`).digest('hex').slice(0, 32);
    const known = this.lookups.get(id) ?? (await this.readLookup(id));
    if (known && this.stillHolds(known, request.repo)) {
      this.lookups.set(id, known);
      request.onProgress?.(recipeProgress(known.identity.environment));
      return { key: known.key, identity: known.identity, cached: true };
    }
    const inputs = await readRecipeInputs(this.options.mirror, request.mirrorPath, request.sha);
    const identity = await this.environment(request.repo, inputs, request.onProgress);
    const key = await computeSnapshotKey({ mirrorPath: request.mirrorPath, sha: request.sha, identity, baseImageId, inputs });
    const entry: Lookup = { key, identity, at: Date.now() };
    this.lookups.set(id, entry);
    await this.writeLookup(id, entry);
    return { key, identity, cached: false };
  }

  private stillHolds(entry: Lookup, repo: string): boolean {
    return (
      entry.identity.repo === repo &&
      Date.now() - entry.at < LOOKUP_TTL_MS &&
      recipeHash(entry.identity.environment) === entry.identity.recipeHash &&
      entry.identity.toolchains.every((tool) => toolchainComplete(tool.hostPath))
    );
  }

  private lookupPath(id: string): string {
    return join(this.options.dataDir, 'snapshot-index', `${id}.json`);
  }

  private async readLookup(id: string): Promise<Lookup | undefined> {
    try {
      const parsed = StoredLookup.safeParse(JSON.parse(await readFile(this.lookupPath(id), 'utf8')));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  /** Best effort: a lookup that cannot be kept is done again next time. */
  private async writeLookup(id: string, entry: Lookup): Promise<void> {
    const path = this.lookupPath(id);
    const partial = `${path}.${process.pid}.${Date.now()}.tmp`;
    try {
      await mkdir(join(this.options.dataDir, 'snapshot-index'), { recursive: true });
      await writeFile(partial, JSON.stringify(entry));
      await rename(partial, path);
    } catch (error) {
      this.options.logger?.warn({ error: String(error) }, 'snapshot lookup not cached');
      await rm(partial, { force: true }).catch(() => undefined);
    }
  }

  /** Finds or builds the snapshot of `repo` at `sha`. */
  async resolve(request: ResolveRequest): Promise<Snapshot> {
    const base = await this.docker.getImage(this.baseImage).inspect().catch((error: unknown) => {
      throw new DockhandError('sandbox_unavailable', `base image ${this.baseImage} is missing`, {
        cause: error,
        hint: 'build it with sandbox-images/base/build.sh',
      });
    });
    const { key, identity } = await this.lookup(request, base.Id);
    const image = `${this.repository}:${key}`;
    const snapshot = (sha: string, built: boolean): Snapshot => ({ image, key, sha, built, identity, environment: identity.environment });
    if (!request.rebuild) {
      const existing = await this.inspect(image);
      if (existing) {
        checkSnapshotLabels(image, existing, identity);
        const labels = readSnapshotLabels(existing);
        if (labels) return snapshot(labels.sha, false);
      }
      const failed = await this.failedBuild(key);
      if (failed) throw new DockhandError('sandbox_unavailable', failed.message, { hint: `${failed.hint ?? ''} (not retried: push a change that alters the snapshot key, or rebuild the snapshot explicitly)`.trim() });
    }
    const running = this.inflight.get(key);
    if (running) return running;
    const work = this.build(request, key, image, identity).then(() => snapshot(request.sha, true));
    this.inflight.set(key, work);
    try {
      return await work;
    } finally {
      this.inflight.delete(key);
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

  private async inspect(image: string): Promise<unknown> {
    try {
      const info = await this.docker.getImage(image).inspect();
      return info.Config?.Labels ?? {};
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  private failedPath(key: string): string {
    return join(this.logDir, `${key}.failed.json`);
  }

  private async failedBuild(key: string): Promise<z.infer<typeof FailedBuild> | undefined> {
    try {
      const parsed = FailedBuild.safeParse(JSON.parse(await readFile(this.failedPath(key), 'utf8')));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  private async build(request: ResolveRequest, key: string, image: string, identity: SnapshotIdentity): Promise<void> {
    const logger = this.options.logger;
    const egress = this.options.egress ?? 'proxy';
    const started = Date.now();
    // Build logs name the repository's files and commands: the server's user only (store/data-dir.ts).
    await mkdir(this.logDir, { recursive: true, mode: 0o700 });
    const logPath = join(this.logDir, `${key}.log`);
    await writeFile(logPath, '', { mode: 0o600 });
    await chmod(logPath, 0o600);
    await rm(this.failedPath(key), { force: true });
    let proxy: EgressProxy | undefined;
    let cache: DependencyCacheListener | undefined;
    const closePorts: (() => Promise<void>)[] = [];
    // The build's secrets, for its audit lines (names only): the registries' and setup.sh's.
    let registries: PrivateRegistry[] = [];
    let setupSecretNames: string[] = [];
    /** The build container's address, once known: the only peer its listeners serve. */
    let peer: string | undefined;
    try {
      let egressSetup: Parameters<typeof buildSnapshotImage>[0]['egress'] = { mode: egress === 'runc-bridge' ? 'runc-bridge' : 'none' };
      if (egress === 'proxy') {
        const network = await ensureBuildNetwork(this.docker);
        const gateway = network.gateway;
        const registryHost = this.options.registry ? new URL(this.options.registry).hostname : undefined;
        const pipIndexHost = this.options.pipIndexUrl ? [new URL(this.options.pipIndexUrl).hostname] : [];
        const fleet = this.options.fleetEgressHosts ?? [];
        const asked = identity.environment.egressHosts;
        const outside = asked.filter((host) => !withinAllowlist(host, fleet));
        if (outside.length > 0) logger?.warn({ repo: request.repo, hosts: outside }, 'egressHosts outside the fleet allowlist (DOCKHAND_EGRESS_HOSTS) are not allowed for this build');
        const allow = [...new Set([...(this.options.registryHosts ?? DEFAULT_REGISTRY_HOSTS), ...(registryHost ? [registryHost] : []), ...pipIndexHost, ...asked.filter((host) => !outside.includes(host))])];
        // Both listeners refuse every connection until the build container's address is known (`admit`).
        // The admin's own registry may be a company mirror on a private address; nothing a repository names may.
        proxy = await startEgressProxy({ host: gateway, allow, ...(registryHost ? { privateAllowed: [registryHost] } : {}), ...(logger ? { logger } : {}) });
        const proxyListener = proxy;
        const admit = async (address: string): Promise<() => Promise<void>> => {
          const listeners = [proxyListener, ...(cache ? [cache] : [])];
          for (const listener of listeners) listener.serve(address);
          peer = address;
          closePorts.push(await openBuildPort(network, proxyListener.port, address));
          if (cache) closePorts.push(await openBuildPort(network, Number(new URL(cache.url).port), address));
          return async () => {
            for (const close of closePorts) await close();
            for (const listener of listeners) await listener.close();
          };
        };
        egressSetup = { mode: 'proxy', proxyUrl: `http://${proxy.host}:${proxy.port}`, refused: proxy.refused, admit };
        // The repository's own registries: the front holds their credentials (private-registries.ts).
        registries = await resolveBuildRegistries({
          repo: request.repo,
          usedBy: `snapshot build ${key} registry front`,
          registries: identity.environment.registries ?? [],
          pythonIndex: identity.environment.pythonIndex,
          credentials: this.options.registryCredentials,
          allowed: this.options.privateRegistries ?? [],
          frontMissing: !this.dependencyCache ? 'the dependency cache (the registry front) is off (DOCKHAND_DEP_CACHE=off)' : usesDependencyCache(identity) || yarnThroughFront(identity) ? undefined : `its package manager (${identity.environment.packageManager?.name ?? 'none'}) does not install through the registry front (npm, pnpm and yarn do)`,
          pythonFrontMissing: !this.dependencyCache ? 'the dependency cache (the registry front) is off (DOCKHAND_DEP_CACHE=off)' : pipThroughFront(identity) ? undefined : 'the repository has no Python install for pip to run (python: false, or no Python project found)',
        });
        // An accelerator only: when it cannot start, the build fetches through the proxy as before (not with registries: they need it).
        if (this.dependencyCache && (usesDependencyCache(identity) || yarnThroughFront(identity) || pipThroughFront(identity))) {
          cache = await this.dependencyCache.listen(gateway, { registries }).catch((error: unknown) => {
            if (registries.length > 0) throw error;
            logger?.warn({ err: error instanceof Error ? error.message : String(error) }, 'dependency cache unavailable; this build fetches through the proxy');
            return undefined;
          });
        }
      } else if (identity.environment.registries?.length || identity.environment.pythonIndex) {
        const field = identity.environment.registries?.length ? 'registries' : 'pythonIndex';
        throw new DockhandError('sandbox_unavailable', `.dockhand/environment.yml names ${field === 'registries' ? 'registries' : 'a pythonIndex'}, but builds here run without the egress proxy (${egress}), where the registry front is`, { field: `.dockhand/environment.yml:${field}` });
      }
      const setupSecrets = await resolveSetupSecrets({ repo: request.repo, usedBy: `snapshot build ${key} setup.sh`, names: identity.environment.setupSecrets ?? [], credentials: this.options.registryCredentials });
      setupSecretNames = setupSecrets.map((secret) => secret.name);
      await buildSnapshotImage({
        docker: this.docker,
        baseImage: this.baseImage,
        ownerId: this.options.ownerId,
        image,
        key,
        sha: request.sha,
        bundle: () => this.options.mirror.bundle(request.mirrorPath, request.sha),
        ...originOf(request.repo, await defaultBranch(request.mirrorPath)),
        identity,
        egress: egressSetup,
        networkName: BUILD_NETWORK,
        ...(this.options.extraCaBundle ? { extraCaBundle: this.options.extraCaBundle } : {}),
        ...(this.options.registry ? { registry: this.options.registry } : {}),
        ...(this.options.pipIndexUrl ? { pipIndexUrl: this.options.pipIndexUrl } : {}),
        ...(cache ? { dependencyCache: cache } : {}),
        ...(setupSecrets.length > 0 ? { setupSecrets } : {}),
        installTimeoutMs: this.options.installTimeoutMs ?? 15 * 60_000,
        logPath,
        ...(request.onProgress ? { onProgress: request.onProgress } : {}),
        ...(logger ? { logger } : {}),
      });
      this.builds += 1;
      const used = secretUses(registries, cache?.secretUses ?? new Map(), setupSecretNames);
      request.onProgress?.({ stage: 'done', elapsedMs: Date.now() - started, image, ...(used.length > 0 ? { line: `repository secrets used: ${describeSecretUses(used)}` } : {}) });
      logger?.info({ image, sha: request.sha, ms: Date.now() - started, ...(cache ? { dependencyCache: describeCacheStats(cache.stats) } : {}) }, 'snapshot built');
    } catch (caught) {
      // A registry that refused the server's credential is the cause to name (npm says only E401): not remembered, the secret is the fix.
      const refused = cache ? describeRefusals(request.repo, cache.refusals) : undefined;
      const error = refused ? new DockhandError('sandbox_unavailable', `${refused.message}; the install failed: ${caught instanceof Error ? caught.message.split('\n')[0] : String(caught)}`, { hint: refused.hint, cause: caught }) : caught;
      const message = error instanceof Error ? error.message : String(error);
      const hint = error instanceof DockhandError ? error.hint : undefined;
      // Only the repository's own failures are remembered; an engine or network fault may pass.
      if (error instanceof SnapshotBuildFailed) await writeFile(this.failedPath(key), JSON.stringify({ message, ...(hint ? { hint } : {}), logPath }), { mode: 0o600 }).catch(() => undefined);
      request.onProgress?.({ stage: 'failed', elapsedMs: Date.now() - started, line: message.split('\n')[0]?.slice(0, 2000) ?? '', image });
      throw error;
    } finally {
      for (const close of closePorts) await close();
      await cache?.close();
      await proxy?.close();
      await this.auditForeign(request.repo, logPath, peer, [proxy, cache]);
      await this.auditSecretUses(request.repo, key, logPath, secretUses(registries, cache?.secretUses ?? new Map(), setupSecretNames));
    }
  }

  /** Connections the build's listeners refused from other addresses (another build, or before this one's was known): the build log says how many (the server's log named each peer). */
  private async auditForeign(repo: string, logPath: string, peer: string | undefined, listeners: ReadonlyArray<{ foreign: number } | undefined>): Promise<void> {
    const foreign = listeners.reduce((sum, listener) => sum + (listener?.foreign ?? 0), 0);
    if (foreign === 0) return;
    this.options.logger?.warn({ repo, foreign, serving: peer ?? 'nobody' }, 'a snapshot build\'s proxy or registry front refused connections from other addresses');
    await appendFile(logPath, `# the build's proxy and registry front refused ${foreign} connection(s) from addresses other than this build container's (${peer ?? 'not known yet'})\n`).catch(() => undefined);
  }

  /** Each secret the build used, by name, step and count, in its build log and the server's log (never a value: the values are not in reach here). */
  private async auditSecretUses(repo: string, key: string, logPath: string, uses: SecretUse[]): Promise<void> {
    if (uses.length === 0) return;
    this.options.logger?.info({ repo, build: key, secrets: uses }, 'repository secrets used by a snapshot build');
    await appendFile(logPath, `# repository secrets used (names only): ${describeSecretUses(uses)}\n`).catch(() => undefined);
  }
}
