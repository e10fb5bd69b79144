import { randomBytes } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import type Docker from 'dockerode';
import type { Logger } from 'pino';
import type { EventPayload } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { containerAddress } from './build-network';
import { LABELS, ownerLabels } from './docker-driver';
import { describeCacheStats, type DependencyCacheStats } from './dep-cache';
import { pipFrontEnvironment, pipThroughFront } from './dep-cache-pip';
import type { RegistryRefusal } from './private-registries';
import { describeYarnFront, prepareYarnFront, restoreYarnFront, yarnFrontEnvironment, yarnThroughFront } from './dep-cache-yarn';
import { DockerSandbox } from './docker-sandbox';
import { describeInstallChanges, readInstallChanges, RECORD_INSTALL_MADE_SCRIPT } from './install-made';
import { DEPENDENCY_GROUPS_HELPER, DEPENDENCY_GROUPS_PROGRAM } from './python-install';
import { PYTHON_REQUIREMENTS_HELPER, PYTHON_REQUIREMENTS_PROGRAM, venvCommandsScript } from './python-requirements';
import { BUILD_REQUIREMENTS_PROBE, describeInstallFailure, diagnoseInstall, InstallTranscript, readBuildRequirementsProbe, REFUSED_MARKER, type UnmetBuildRequirement } from './install-failure';
import { SCRIPTED_PACKAGES_HELPER, SETUP_SCRIPT_PATH } from './recipe';
import { describeSetupSecretSearch, findSetupSecrets, maskSetupSecrets, READ_SETUP_SECRETS, SETUP_SECRETS_DIR, SETUP_SECRETS_TMPFS, setupSecretsInput, writeSetupSecretsScript, type SetupSecret } from './setup-secrets';
import { WORKSPACE } from './paths';
import { labelInstruction, snapshotLabelValues, type SnapshotIdentity } from './snapshot-labels';
import { toolchainPath } from './toolchains';
import { checkoutFromBundle, type WorkspaceOrigin } from './workspace';

/** The install or setup.sh failed: the repository's problem, recorded so the same key is not built again in a loop. */
export class SnapshotBuildFailed extends DockhandError {}

export type SnapshotProgress = Pick<EventPayload<'snapshot.progress'>, 'stage' | 'elapsedMs' | 'line' | 'image' | 'environment'>;
export type ProgressListener = (progress: SnapshotProgress) => void;

const CA_PATH_IN_CONTAINER = '/etc/dockhand/extra-ca.crt';
const STAGE_MARKER = '::dockhand:stage:';
/**
 * Never part of a task's diff, nor a change the feedback engine sees (both read git's standard
 * excludes, `.git/info/exclude` among them): installed trees and package-manager state, and what
 * test runners write into the workspace on every run whether the repository ignores it or not —
 * nyc's `.nyc_output/` (node-tap 16, `nyc mocha`) and node-tap 18's `.tap/`. Unignored, a run's
 * output was an untracked change no import graph places, so every later selection was the full
 * suite, and it was in the task's diff. Only untracked files are affected: a repository that
 * tracks files there keeps their changes in the diff. A change here needs SNAPSHOT_KEY_VERSION
 * bumped: images already built keep the exclude they were built with.
 */
const WORKSPACE_EXCLUDES = [
  'node_modules/',
  '.venv/',
  '.yarn/cache/',
  '.yarn/unplugged/',
  '.yarn/install-state.gz',
  '.pnp.cjs',
  '.pnp.loader.mjs',
  '.pnpm-store/',
  '.nyc_output/',
  '.tap/',
];

/** Lists installed packages that have install-time scripts, minus the names given (skipScripts). */
const SCRIPTED_PACKAGES_PROGRAM = `
const fs = require('fs'), path = require('path');
const skip = new Set(process.argv.slice(2)), found = new Set();
function visit(dir, depth) {
  let entries; try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const entry of entries) {
    if (!entry.isDirectory() && !entry.isSymbolicLink()) continue;
    const full = path.join(dir, entry.name);
    if (entry.name === '.bin') continue;
    if (entry.name.startsWith('@')) { visit(full, depth); continue; }
    if (entry.name === '.pnpm') { for (const inner of fs.readdirSync(full)) visit(path.join(full, inner, 'node_modules'), depth + 1); continue; }
    try {
      const manifest = JSON.parse(fs.readFileSync(path.join(full, 'package.json'), 'utf8'));
      const scripts = manifest.scripts || {};
      if (scripts.preinstall || scripts.install || scripts.postinstall || fs.existsSync(path.join(full, 'binding.gyp'))) found.add(manifest.name);
    } catch {}
    if (depth < 8) visit(path.join(full, 'node_modules'), depth + 1);
  }
}
visit('node_modules', 0);
process.stdout.write([...found].filter((name) => name && !skip.has(name)).sort().join(' '));
`;

export interface BuildRequest {
  docker: Docker;
  baseImage: string;
  ownerId: string;
  image: string;
  key: string;
  sha: string;
  bundle: () => Promise<Buffer>;
  /** The `origin` remote and default branch a CI checkout has (workspace.ts); absent: none. */
  origin?: WorkspaceOrigin;
  identity: SnapshotIdentity;
  /**
   * 'proxy': runsc-egress behind the allowlist proxy (given here); 'runc-bridge'; 'none'.
   * `admit` opens the build's listeners (proxy, registry front) to the build container's address
   * on `networkName` alone; it is called once the container runs (`sleep infinity`, nothing of the
   * repository yet), before the install, and the closer it returns is called before the container
   * is removed, so no later container given the same address finds them open.
   */
  egress: { mode: 'proxy'; proxyUrl: string; refused: readonly string[]; admit: (address: string) => Promise<() => Promise<void>> } | { mode: 'runc-bridge' | 'none' };
  networkName: string;
  extraCaBundle?: string;
  registry?: string;
  /**
   * The node's dependency cache (`dep-cache.ts`), listening for this build on the egress network's
   * gateway: npm and pnpm use it as their registry. Absent: the registry is reached through the proxy.
   */
  dependencyCache?: { url: string; host: string; stats: DependencyCacheStats; refusals?: readonly RegistryRefusal[] };
  /**
   * The company's Python package index (`DOCKHAND_PIP_INDEX_URL`), pip's only index for the
   * build (its host is on the proxy's allowlist). Absent: pip uses no index at all (what the base
   * image's Debian packages and the repository's own files provide), and builds without isolation.
   */
  pipIndexUrl?: string;
  /** The values of the recipe's `setupSecrets`, for setup.sh only (`setup-secrets.ts`). */
  setupSecrets?: readonly SetupSecret[];
  installTimeoutMs: number;
  logPath: string;
  onProgress?: ProgressListener;
  logger?: Logger;
}

/** The environment of the build container (also what the install script sees). */
function buildEnvironment(request: BuildRequest): Record<string, string> {
  const { identity } = request;
  const env: Record<string, string> = {
    HOME: '/home/dockhand',
    LANG: 'C.UTF-8',
    CI: 'true',
    PATH: toolchainPath(identity.toolchains, `${WORKSPACE}/node_modules/.bin:${WORKSPACE}/.venv/bin:/usr/local/bin:/usr/bin:/bin`),
    // Caches on tmpfs: they would otherwise be committed into every snapshot image.
    npm_config_cache: '/tmp/npm-cache',
    npm_config_store_dir: '/tmp/pnpm-store',
    npm_config_foreground_scripts: 'true',
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
    PIP_NO_CACHE_DIR: '1',
    PIP_DISABLE_PIP_VERSION_CHECK: '1',
    COREPACK_ENABLE_STRICT: '0',
  };
  if (request.pipIndexUrl) env.PIP_INDEX_URL = request.pipIndexUrl;
  // pip's double negative: PIP_NO_BUILD_ISOLATION=0 turns build isolation off, so a CI's own
  // `pip install -e .[test]` builds with the image's backends instead of fetching them.
  else Object.assign(env, { PIP_NO_INDEX: '1', PIP_NO_BUILD_ISOLATION: '0' });
  const manager = identity.environment.packageManager;
  // Yarn berry refuses YARN_* variables it does not know, so each yarn gets only its own.
  const berry = manager?.name === 'yarn-berry';
  const berryMajor = berry ? Number(manager.version.split('.')[0]) : 0;
  // Yarn classic's cache is only a download cache; berry's cache is what Plug'n'Play runs from (kept in the workspace).
  if (manager?.name === 'yarn') env.YARN_CACHE_FOLDER = '/tmp/yarn-cache';
  // Yarn classic gives a download 30 s; through the egress proxy on a loaded host a large tarball
  // takes longer and the whole install fails (seen: core-js-2.6.12.tgz ESOCKETTIMEDOUT at load 40).
  if (manager?.name === 'yarn') env.YARN_NETWORK_TIMEOUT = '300000';
  if (berry) Object.assign(env, { YARN_ENABLE_TELEMETRY: '0', YARN_ENABLE_GLOBAL_CACHE: 'false', YARN_ENABLE_PROGRESS_BARS: 'false' });
  if (request.egress.mode === 'proxy') {
    const url = request.egress.proxyUrl;
    Object.assign(env, { HTTPS_PROXY: url, https_proxy: url, HTTP_PROXY: url, http_proxy: url, npm_config_https_proxy: url, npm_config_proxy: url });
    if (berry) Object.assign(env, { YARN_HTTPS_PROXY: url, YARN_HTTP_PROXY: url });
    // Node 22.21+ and 24: plain https.get() in a lifecycle script goes through the proxy too, so its host is seen and named.
    env.NODE_USE_ENV_PROXY = '1';
    const proxyHost = new URL(url).hostname;
    Object.assign(env, { NO_PROXY: proxyHost, no_proxy: proxyHost });
  }
  if (request.extraCaBundle) {
    Object.assign(env, { NODE_EXTRA_CA_CERTS: CA_PATH_IN_CONTAINER, npm_config_cafile: CA_PATH_IN_CONTAINER, PIP_CERT: CA_PATH_IN_CONTAINER });
    if (berry) env[berryMajor >= 4 ? 'YARN_HTTPS_CA_FILE_PATH' : 'YARN_CA_FILE_PATH'] = CA_PATH_IN_CONTAINER;
  }
  if (request.registry) {
    env.npm_config_registry = request.registry;
    if (berry) env.YARN_NPM_REGISTRY_SERVER = request.registry;
    else if (manager?.name === 'yarn') env.YARN_REGISTRY = request.registry;
  }
  if (request.dependencyCache && usesDependencyCache(identity)) {
    const cache = request.dependencyCache;
    // Plain HTTP to the host, never through the CONNECT proxy (which refuses plain requests).
    env.npm_config_registry = cache.url;
    env.npm_config_noproxy = cache.host;
    Object.assign(env, { NO_PROXY: cache.host, no_proxy: cache.host });
    // npm fetches a lockfile's resolved URLs on this host from the configured registry instead
    // (its default replaces registry.npmjs.org, the cache's default upstream).
    if (request.registry) env.npm_config_replace_registry_host = new URL(request.registry).hostname;
    // A repository's own registries are behind the front too: a lockfile's resolved URLs on their hosts are fetched from it.
    if (identity.environment.registries?.length) env.npm_config_replace_registry_host = 'always';
  }
  // A yarn repository's own registries are behind the front too (dep-cache-yarn.ts); its public packages keep the proxy.
  if (request.dependencyCache && yarnThroughFront(identity) && (manager?.name === 'yarn' || manager?.name === 'yarn-berry')) yarnFrontEnvironment(env, manager.name, request.dependencyCache.url, identity.environment.registries ?? []);
  // The repository's Python index is behind the front too (dep-cache-pip.ts).
  const index = identity.environment.pythonIndex;
  if (request.dependencyCache && index && pipThroughFront(identity)) pipFrontEnvironment(env, request.dependencyCache.url, index, request.pipIndexUrl);
  if (manager?.name === 'pnpm') Object.assign(env, pnpmSettings(env));
  return env;
}

/**
 * pnpm 11 reads its settings from `pnpm_config_*` and no longer from `npm_config_*` (its
 * config/reader's env.js), so each npm_config_ setting of the build is given under both names.
 * Census tinylibs/tinybench (pnpm 11.20): the store went to ~/.local/share/pnpm (into the
 * committed layer) instead of /tmp's tmpfs, pnpm hard-linked 682 packages' files from it into
 * node_modules on the same file system, and gVisor, which holds a host file descriptor for a
 * hard-linked file, ran the runsc process out of its 20,000 (ERR_PNPM_EMFILE, then even `sleep`
 * "Too many open files"; 32,000 hard links in a runsc container fail the same way, copies do
 * not). From a store on another file system pnpm copies. The registry (the dependency cache)
 * was ignored the same way.
 */
export function pnpmSettings(env: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter(([key]) => key.startsWith('npm_config_')).map(([key, value]) => [`pnpm_config_${key.slice('npm_config_'.length)}`, value]));
}

/**
 * npm and pnpm read the registry from npm_config_registry and check every tarball against the
 * lockfile's integrity. Yarn classic fetches its lockfile's own URLs and berry refuses a plain-HTTP
 * registry without more settings: both keep the proxy (a repository's own registries excepted:
 * `dep-cache-yarn.ts` sends those to the front). The workspace is the same either way (the
 * registry is not in the key, the lockfiles, or anything git tracks).
 */
export function usesDependencyCache(identity: SnapshotIdentity): boolean {
  const manager = identity.environment.packageManager?.name;
  return manager === 'npm' || manager === 'pnpm';
}

/**
 * Berry names the CA setting by version (httpsCaFilePath from 4.0; caFilePath before, which 4
 * refuses as legacy), and the yarn that reads it is the repository's yarnPath release where one is
 * committed, not the toolchain's berry that starts it (census arcanis/typanion: yarn 4.18.1 hands
 * over to .yarn/releases/yarn-4.0.0-rc.2.cjs, which refused YARN_HTTPS_CA_FILE_PATH: "Unrecognized
 * or legacy configuration settings found: httpsCaFilePath"). The variable follows that file.
 */
export const BERRY_CA_SETTING_SCRIPT =
  `ca="\${YARN_HTTPS_CA_FILE_PATH:-\${YARN_CA_FILE_PATH:-}}"; ` +
  `release=$(sed -n "s/^yarnPath:[[:space:]]*['\\"]\\{0,1\\}\\([^'\\" ]*\\).*/\\1/p" .yarnrc.yml 2>/dev/null | head -n 1); ` +
  `if [ -n "$ca" ] && [ -n "$release" ] && [ -f "$release" ]; then unset YARN_HTTPS_CA_FILE_PATH YARN_CA_FILE_PATH; ` +
  `if grep -q httpsCaFilePath "$release"; then export YARN_HTTPS_CA_FILE_PATH="$ca"; else export YARN_CA_FILE_PATH="$ca"; fi; fi`;

/** The install step: the recipe's install command, then setup.sh when it runs after it. */
export function buildScript(identity: SnapshotIdentity): string {
  const recipe = identity.environment;
  const secrets = recipe.setupSecrets ?? [];
  const lines = ['set -eu', ...(secrets.length > 0 ? [READ_SETUP_SECRETS] : []), `printf '${WORKSPACE_EXCLUDES.join('\\n')}\\n' >> .git/info/exclude`, `echo "${STAGE_MARKER}install"`];
  // setup: replace makes setup.sh the install itself.
  if (secrets.length > 0 && recipe.setupScript === 'replace') lines.push(writeSetupSecretsScript(secrets));
  if (recipe.packageManager?.name === 'yarn-berry') lines.push(BERRY_CA_SETTING_SCRIPT);
  lines.push(recipe.install.command);
  // Yarn 4 writes its own version into package.json's packageManager when the field is missing;
  // an immutable install changes nothing else there, so the repository's file is put back.
  if (recipe.packageManager?.name === 'yarn-berry') lines.push('git diff --quiet -- package.json 2>/dev/null || git checkout -q -- package.json');
  if (recipe.setupScript === 'after') lines.push(`echo "${STAGE_MARKER}setup"`, ...(secrets.length > 0 ? [writeSetupSecretsScript(secrets)] : []), `bash ${SETUP_SCRIPT_PATH}`);
  return lines.join('\n');
}

/**
 * What the install wrote or rewrote stays in the image as part of the environment and is recorded
 * there (install-made.ts), so no task's diff shows it. The build log lists each path with the blob
 * the install left; the progress line names them.
 */
async function recordInstallMade(builder: DockerSandbox, request: BuildRequest, log: WriteStream, progress: (force: boolean) => void, setLine: (line: string) => void): Promise<void> {
  const record = await builder.raw(['bash', '-c', RECORD_INSTALL_MADE_SCRIPT], { timeoutMs: 300_000 });
  if (record.exitCode !== 0) throw new DockhandError('internal', `recording what the install changed failed (exit ${record.exitCode}): ${record.stderr.toString('utf8').trim().slice(0, 2000)}`);
  const changes = readInstallChanges(record.stdout.toString('utf8'));
  if (changes.length === 0) return;
  log.write(`\n# the install changed ${changes.length} file(s); kept in the snapshot as part of the environment, left out of every task's diff while unchanged:\n`);
  for (const change of changes) log.write(`#   ${change.change} ${change.path}${change.blob ? ` ${change.blob}` : ''}\n`);
  setLine(`the install changed ${describeInstallChanges(changes)}: kept as part of the environment, not of any diff`);
  progress(true);
  request.logger?.info({ image: request.image, files: changes.length }, 'snapshot install changed tracked or unignored files; recorded as install-made');
}

/** After a failed install of a Python project: pyproject.toml's build requirements the build's Python lacks (none when unknown). */
async function unmetBuildRequirements(builder: DockerSandbox): Promise<UnmetBuildRequirement[]> {
  const script = 'py=python3; [ -x .venv/bin/python ] && py=.venv/bin/python; exec "$py" -c "$0"';
  const probe = await builder.raw(['sh', '-c', script, BUILD_REQUIREMENTS_PROBE], { timeoutMs: 30_000 }).catch(() => undefined);
  return probe?.exitCode === 0 ? readBuildRequirementsProbe(probe.stdout.toString('utf8')) : [];
}

/**
 * Builds the snapshot image: the base image with the toolchains mounted, the repository at `sha`
 * in /workspace, the recipe's install (lifecycle scripts under the egress allowlist), setup.sh,
 * then `docker commit` with the snapshot's labels. The whole output goes to `logPath`; progress
 * (stage, elapsed, last line) to `onProgress`, at most once a second besides stage changes.
 */
export async function buildSnapshotImage(request: BuildRequest): Promise<void> {
  const started = Date.now();
  const { docker, identity } = request;
  const env = buildEnvironment(request);
  let stage = 'install' as SnapshotProgress['stage'];
  let lastLine = '';
  let lastSent = 0;
  const progress = (force: boolean): void => {
    if (!request.onProgress) return;
    const now = Date.now();
    if (!force && now - lastSent < 1000) return;
    lastSent = now;
    request.onProgress({ stage, elapsedMs: now - started, ...(lastLine ? { line: lastLine.slice(0, 2000) } : {}), image: request.image });
  };
  const log: WriteStream = createWriteStream(request.logPath, { flags: 'w' });
  log.write(`# dockhand snapshot build ${request.image} at ${request.sha}\n# recipe ${JSON.stringify(identity.environment)}\n# toolchains ${identity.toolchains.map((tool) => `${tool.name}@${tool.version}`).join(' ')}\n`);
  const binds = identity.toolchains.map((tool) => `${tool.hostPath}:${tool.target}:ro`);
  if (request.extraCaBundle) binds.push(`${request.extraCaBundle}:${CA_PATH_IN_CONTAINER}:ro`);
  const runtime = request.egress.mode === 'proxy' ? 'runsc-egress' : request.egress.mode === 'runc-bridge' ? 'runc' : 'runsc';
  const networkMode = request.egress.mode === 'proxy' ? request.networkName : request.egress.mode === 'runc-bridge' ? 'bridge' : 'none';
  if (request.egress.mode === 'runc-bridge') request.logger?.warn({ image: request.image }, 'FALLBACK: dependency install runs on plain runc with full egress on the default bridge (no runsc-egress)');
  let container: Docker.Container | undefined;
  let revoke: (() => Promise<void>) | undefined;
  try {
    container = await docker.createContainer({
      name: `dockhand-build-${randomBytes(5).toString('hex')}`,
      Image: request.baseImage,
      Cmd: ['sleep', 'infinity'],
      User: '1000:1000',
      WorkingDir: WORKSPACE,
      // The install's environment goes to its exec only: a container's Env would be committed into
      // the image and reach every task sandbox (a dead proxy, the build's npm settings).
      Env: [],
      Labels: { [LABELS.sandbox]: '1', ...ownerLabels(request.ownerId), [LABELS.pool]: 'snapshot-build' },
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
        // gVisor's default of 20,000 open files is too few for pnpm 11's parallel linking (census
        // tinylibs/tinybench: ERR_PNPM_EMFILE importing its 682 packages); the host's limit is far higher.
        Ulimits: [{ Name: 'nofile', Soft: 1048576, Hard: 1048576 }],
        Tmpfs: { '/tmp': 'rw,exec,size=2g', ...(request.setupSecrets?.length ? { [SETUP_SECRETS_DIR]: SETUP_SECRETS_TMPFS } : {}) },
      },
    });
    await container.start();
    if (request.egress.mode === 'proxy') revoke = await request.egress.admit(await containerAddress(container, request.networkName));
    // The workspace is in the container's own layer (no volume) so that `docker commit` keeps it.
    const builder = new DockerSandbox(docker, container, container.id, request.baseImage, request.sha, {}, 4096 * 1024 * 1024, () => undefined);
    const init = await builder.raw(['git', 'init', '-q', WORKSPACE]);
    if (init.exitCode !== 0) throw new DockhandError('internal', `git init failed: ${init.stderr.toString('utf8')}`);
    await checkoutFromBundle(builder, request.sha, await request.bundle(), request.origin);
    if (identity.environment.install.command.includes(DEPENDENCY_GROUPS_HELPER)) {
      await builder.raw(['sh', '-c', `mkdir -p /tmp/dockhand && cat > ${DEPENDENCY_GROUPS_HELPER}`], { stdin: Buffer.from(DEPENDENCY_GROUPS_PROGRAM) });
    }
    if (identity.environment.install.command.includes(PYTHON_REQUIREMENTS_HELPER)) {
      await builder.raw(['sh', '-c', `mkdir -p /tmp/dockhand && cat > ${PYTHON_REQUIREMENTS_HELPER}`], { stdin: Buffer.from(PYTHON_REQUIREMENTS_PROGRAM) });
    }
    if (identity.environment.skipScripts.length > 0) {
      await builder.raw(['sh', '-c', `mkdir -p /tmp/dockhand && cat > ${SCRIPTED_PACKAGES_HELPER}`], { stdin: Buffer.from(SCRIPTED_PACKAGES_PROGRAM) });
    }
    const yarnFront = request.dependencyCache && yarnThroughFront(identity) ? await prepareYarnFront(builder, identity, request.dependencyCache.url) : undefined;
    if (yarnFront) log.write(describeYarnFront(yarnFront));
    if (env.PIP_INDEX_URL && request.dependencyCache && pipThroughFront(identity)) log.write(`# pip through the registry front: PIP_INDEX_URL=${env.PIP_INDEX_URL}${env.PIP_EXTRA_INDEX_URL ? ` (extra index ${env.PIP_EXTRA_INDEX_URL})` : ''}\n`);
    progress(true);
    let pending = '';
    const refused = request.egress.mode === 'proxy' ? request.egress.refused : [];
    const transcript = new InstallTranscript(refused);
    // A refusal is marked in the transcript (and the log) when it happens, so the diagnosis can
    // tell which package's script was running then.
    const watchRefusals = (): void => {
      for (const target of transcript.watch()) log.write(`\n${REFUSED_MARKER}${target}\n`);
    };
    const refusalTimer = setInterval(watchRefusals, 250);
    const secrets = request.setupSecrets ?? [];
    const install = await builder.raw(['bash', '-c', buildScript(identity)], {
      timeoutMs: request.installTimeoutMs,
      env,
      ...(secrets.length > 0 ? { stdin: setupSecretsInput(secrets) } : {}),
      onOutput: (chunk) => {
        watchRefusals();
        // A chunk boundary inside a value would leave it unmasked: setup.sh is told not to print them.
        const text = secrets.length > 0 ? maskSetupSecrets(chunk.toString('utf8'), secrets) : chunk.toString('utf8');
        log.write(secrets.length > 0 ? text : chunk);
        transcript.push(text);
        pending += text;
        const lines = pending.split(/\r?\n|\r/);
        pending = lines.pop() ?? '';
        let changed = false;
        for (const line of lines) {
          const text = line.trim();
          if (text.startsWith(STAGE_MARKER)) {
            const next = text.slice(STAGE_MARKER.length);
            if (next === 'install' || next === 'setup') {
              changed = changed || next !== stage;
              stage = next;
            }
          } else if (text !== '') lastLine = text;
        }
        progress(changed);
      },
    }).finally(() => clearInterval(refusalTimer));
    watchRefusals();
    if (install.exitCode !== 0) {
      const output = transcript.toString();
      const tail = output
        .split('\n')
        .filter((line) => !line.startsWith(STAGE_MARKER) && !line.startsWith(REFUSED_MARKER))
        .join('\n')
        .slice(-3000);
      const diagnosis = diagnoseInstall(output, refused);
      if (identity.environment.python && stage === 'install' && !diagnosis.packageName) {
        const unmet = await unmetBuildRequirements(builder);
        if (unmet.length > 0) diagnosis.unmetBuildRequirements = unmet;
      }
      const { message, hint } = describeInstallFailure({ exitCode: install.exitCode, tail, diagnosis, logPath: request.logPath, setupFailed: stage === 'setup', pipIndex: request.pipIndexUrl ?? identity.environment.pythonIndex?.url ?? null });
      throw new SnapshotBuildFailed('sandbox_unavailable', message, { hint });
    }
    // A registry that refused the server's credential fails the build even when the install got
    // past it (pip's project install falls back to the source tree): the snapshot would lack the
    // repository's private packages. Not remembered (the secret is the fix).
    // The snapshot manager names the registry, its answer and the secret (describeRefusals).
    const refusals = request.dependencyCache?.refusals ?? [];
    if (refusals.length > 0) throw new DockhandError('sandbox_unavailable', `the install went on without what the registry refused (${refusals.map((refusal) => refusal.path).slice(0, 3).join(', ')})`);
    if (yarnFront) await restoreYarnFront(builder, yarnFront);
    if (secrets.length > 0) {
      const search = await findSetupSecrets(container, builder, secrets);
      for (const note of [...search.notes, ...search.found.map((hit) => `setup secret ${hit.secret} found (${hit.encoding}): ${hit.path}`)]) log.write(`\n# ${note}\n`);
      const failure = describeSetupSecretSearch(search, request.logPath);
      if (failure) throw new SnapshotBuildFailed('sandbox_unavailable', failure.message, { field: SETUP_SCRIPT_PATH, hint: failure.hint });
    }
    if (identity.environment.python) {
      const commands = await builder.raw(['bash', '-c', `cd ${WORKSPACE} && ${venvCommandsScript()}`]);
      if (commands.exitCode !== 0) log.write(`\n# the venv's commands for Debian's python3-* ones could not be made: ${commands.stderr.toString('utf8').trim()}\n`);
    }
    await recordInstallMade(builder, request, log, progress, (line) => (lastLine = line));
    const status = await builder.workspaceState();
    // git that cannot read the workspace says why (census: "moved HEAD … to no commit" hid it).
    if (status.head === '') {
      throw new SnapshotBuildFailed('sandbox_unavailable', `after the install, git cannot read the workspace's HEAD (${request.sha} before it): ${status.error ?? 'no output'}`, {
        hint: `make the install leave the workspace's .git alone (it may write files, not rewrite .git); full log: ${request.logPath}`,
      });
    }
    if (status.head !== request.sha) {
      throw new SnapshotBuildFailed('sandbox_unavailable', `the install moved the workspace's HEAD from ${request.sha} to ${status.head}`, {
        hint: `make the install leave the checked-out commit alone (it may write files, not commit or check out); full log: ${request.logPath}`,
      });
    }
    if (!status.clean) throw new DockhandError('internal', `snapshot workspace at ${request.sha} still shows changes after the install's were recorded:\n${status.status}`);
    stage = 'commit';
    progress(true);
    const [repository, tag] = request.image.split(':');
    await container.commit({
      repo: repository,
      tag,
      pause: true,
      changes: ['CMD ["sleep", "infinity"]', 'USER 1000:1000', `WORKDIR ${WORKSPACE}`, labelInstruction(snapshotLabelValues({ key: request.key, sha: request.sha, identity }))].join('\n'),
    });
    log.write(`\n# built in ${Date.now() - started} ms\n`);
  } catch (error) {
    log.write(`\n# FAILED: ${error instanceof Error ? error.message : String(error)}\n`);
    throw error;
  } finally {
    await revoke?.().catch((error: unknown) => request.logger?.warn({ err: error instanceof Error ? error.message : String(error) }, 'closing the build container\'s listeners failed'));
    if (request.dependencyCache && (usesDependencyCache(identity) || yarnThroughFront(identity) || pipThroughFront(identity))) log.write(`# dependency cache: ${describeCacheStats(request.dependencyCache.stats)}\n`);
    await new Promise<void>((resolve) => log.end(() => resolve()));
    await container?.remove({ force: true, v: true }).catch(() => undefined);
  }
}
