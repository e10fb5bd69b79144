import { isMap, parseDocument } from 'yaml';
import type { DockerSandbox } from './docker-sandbox';
import type { SnapshotIdentity } from './snapshot-labels';

/**
 * Yarn through the registry front (issue 25). npm and pnpm take the front as their registry from
 * `npm_config_registry` (`snapshot-build.ts`); the yarns need more, because neither asks a
 * configured registry for what its lockfile already names:
 *
 * - yarn classic (1.x) downloads each `resolved` URL of yarn.lock as it is written there, so a
 *   private package's URL (the company registry's) is pointed at the front for the install;
 * - yarn berry takes a scope's registry from `npmScopes` in a `.yarnrc.yml` (no environment
 *   variable holds a map), and refuses plain http unless `unsafeHttpWhitelist` names the host.
 *
 * So for the install only: the repository's files that name one of its registries (yarn.lock,
 * .yarnrc.yml, .yarnrc, .npmrc) have that registry's URL replaced by the front's, and a build rc
 * file routes each configured scope (and the default registry, when one is configured) to the
 * front: `/tmp/dockhand/registries.npmrc` for classic (its `userconfig`, on the build's tmpfs),
 * `~/.yarnrc.yml` for berry (the one rc file it reads outside the project; removed after the
 * install). Afterwards the repository's files are checked out again, so the snapshot's workspace
 * is the commit's. Every file written holds the front's URL and nothing else of the registry: the
 * credential stays in the server, and the front adds it upstream.
 *
 * Public packages keep the CONNECT proxy (classic's lockfile URLs on registry.yarnpkg.com, berry's
 * default registry); only a repository with registries installs through the front at all.
 *
 * The repository's own credential lines for a registry the front replaces are dropped for the
 * install too (`dropFrontCredentials`): a committed `//npm.acme.internal/:_authToken=${NPM_TOKEN}`
 * or `npmAuthToken: "${NPM_TOKEN}"` names a variable the build does not have, and both yarns refuse
 * to start on an unset one; the front adds the real credential upstream anyway.
 *
 * It will not: rewrite a registry URL in any other file, nor drop credential lines of a registry
 * the front does not replace (such a line with an unset variable still fails the install, as it
 * would on a developer's machine without it).
 */

/** Classic's npm `userconfig` for the install (on the build container's /tmp tmpfs: never committed). */
export const CLASSIC_RC_PATH = '/tmp/dockhand/registries.npmrc';
/** Berry's home rc file for the install (removed before the commit). */
export const BERRY_RC_PATH = '/home/dockhand/.yarnrc.yml';
/** The repository's files whose registry URLs are pointed at the front for the install. */
export const YARN_REGISTRY_FILES = ['yarn.lock', '.yarnrc.yml', '.yarnrc', '.npmrc'] as const;

interface FrontRegistry {
  scope?: string | undefined;
  url: string;
}

/** Whether this build's yarn installs through the front: a yarn repository that names registries. */
export function yarnThroughFront(identity: SnapshotIdentity): boolean {
  const manager = identity.environment.packageManager?.name;
  return (manager === 'yarn' || manager === 'yarn-berry') && (identity.environment.registries?.length ?? 0) > 0;
}

/** A registry's base URL without its trailing slash (how lockfiles and rc files write it, either way). */
function base(url: string): string {
  return url.replace(/\/+$/, '');
}

/** `text` with every registry's base URL turned into the front's (longest first, so a path under another is not cut). */
export function pointRegistryUrlsAtFront(text: string, registries: readonly FrontRegistry[], frontUrl: string): string {
  const front = base(frontUrl);
  const bases = [...new Set(registries.map((registry) => base(registry.url)))].sort((a, b) => b.length - a.length);
  let out = text;
  for (const from of bases) {
    out = out.split(`${from}/`).join(`${front}/`);
    // A bare base URL (an rc file's `registry=https://npm.acme.internal`), not one that goes on with more of a host or path.
    out = out.replace(new RegExp(`${from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w./:-])`, 'g'), front);
  }
  return out;
}

/** The settings that carry a registry credential: npm/classic rc keys, berry's. */
const RC_CREDENTIAL_KEYS = '_authToken|_auth|_password|username|email|certfile|keyfile';
const BERRY_CREDENTIAL_KEYS = ['npmAuthToken', 'npmAuthIdent'];

/** `//npm.acme.internal/path/`: how rc files key a registry's settings (scheme dropped, one trailing slash). */
function nerfDart(url: string): string {
  const parsed = new URL(url);
  return `//${parsed.host}${parsed.pathname.replace(/\/?$/, '/')}`;
}

/**
 * `text` (an .npmrc, .yarnrc or .yarnrc.yml) without its credential settings for the registries the
 * front replaces: per-registry keys (`//host/path/:_authToken`, berry's `npmRegistries` entries),
 * the scopes' (berry's `npmScopes.<scope>.npmAuthToken`), and the top-level ones when the default
 * registry is replaced. Everything else is left as it is.
 */
export function dropFrontCredentials(file: string, text: string, registries: readonly FrontRegistry[]): string {
  const darts = new Set(registries.map((registry) => nerfDart(registry.url)));
  const defaulted = registries.some((registry) => !registry.scope);
  if (file.endsWith('.yml')) {
    const document = parseDocument(text);
    if (document.errors.length > 0 || !isMap(document.contents)) return text;
    let changed = false;
    const drop = (path: unknown[]): void => {
      for (const key of BERRY_CREDENTIAL_KEYS) {
        if (!document.hasIn([...path, key])) continue;
        document.deleteIn([...path, key]);
        changed = true;
      }
    };
    if (defaulted) drop([]);
    for (const registry of registries) if (registry.scope) drop(['npmScopes', registry.scope.replace(/^@/, '')]);
    const entries = document.get('npmRegistries');
    if (isMap(entries)) {
      for (const pair of entries.items) {
        const key = String((pair.key as { value?: unknown } | null)?.value ?? pair.key);
        const dart = /^https?:/.test(key) ? nerfDart(key) : key.replace(/\/?$/, '/');
        if (darts.has(dart)) drop(['npmRegistries', key]);
      }
    }
    return changed ? document.toString() : text;
  }
  const perRegistry = new RegExp(`^\\s*"?(//[^\\s"=]+?):(?:${RC_CREDENTIAL_KEYS})"?\\s*(?:=|\\s)`);
  const topLevel = new RegExp(`^\\s*"?(?:_authToken|_auth|_password)"?\\s*(?:=|\\s)`);
  return text
    .split('\n')
    .filter((line) => {
      const dart = perRegistry.exec(line)?.[1];
      if (dart !== undefined) return !darts.has(dart.replace(/\/?$/, '/'));
      return !(defaulted && topLevel.test(line));
    })
    .join('\n');
}

/** The build rc file: each configured scope (and the default registry, if configured) at the front, nothing else. */
export function yarnRcFile(manager: 'yarn' | 'yarn-berry', registries: readonly FrontRegistry[], frontUrl: string): { path: string; text: string } {
  const front = `${base(frontUrl)}/`;
  const scopes = registries.flatMap((registry) => (registry.scope ? [registry.scope.replace(/^@/, '')] : []));
  const defaulted = registries.some((registry) => !registry.scope);
  if (manager === 'yarn') {
    const lines = [...scopes.map((scope) => `@${scope}:registry=${front}`), ...(defaulted ? [`registry=${front}`] : [])];
    return { path: CLASSIC_RC_PATH, text: `${lines.join('\n')}\n` };
  }
  // The default registry and the http whitelist are set in the environment (yarnFrontEnvironment): above every rc file.
  const text = scopes.length > 0 ? `npmScopes:\n${scopes.map((scope) => `  ${JSON.stringify(scope)}:\n    npmRegistryServer: ${JSON.stringify(front)}`).join('\n')}\n` : '';
  return { path: BERRY_RC_PATH, text };
}

/**
 * The install's environment changes: the front's plain http never through the CONNECT proxy
 * (classic's `proxy` setting and berry's `httpProxy` would send it there, and the proxy refuses
 * plain requests); classic reads the build rc file as its user config; berry allows plain http to
 * the front alone and, when the repository configures a default registry, takes the front as it
 * (the environment is above the repository's own .yarnrc.yml).
 */
export function yarnFrontEnvironment(env: Record<string, string>, manager: 'yarn' | 'yarn-berry', frontUrl: string, registries: readonly FrontRegistry[]): void {
  const host = new URL(frontUrl).hostname;
  const noProxy = [...new Set([...(env.NO_PROXY ?? '').split(','), host].filter(Boolean))].join(',');
  Object.assign(env, { NO_PROXY: noProxy, no_proxy: noProxy });
  if (manager === 'yarn') {
    delete env.npm_config_proxy;
    env.npm_config_userconfig = CLASSIC_RC_PATH;
    return;
  }
  delete env.YARN_HTTP_PROXY;
  env.YARN_UNSAFE_HTTP_WHITELIST = host;
  if (registries.some((registry) => !registry.scope)) env.YARN_NPM_REGISTRY_SERVER = `${base(frontUrl)}/`;
}

/** What `prepareYarnFront` changed, for `restoreYarnFront`. */
export interface YarnFrontState {
  /** Repository files rewritten for the install (checked out again after it). */
  rewritten: string[];
  rcPath: string;
  /** The build rc file's text (the front's URL and scope names only: shown in the build log). */
  rcText: string;
}

/** The build log's lines: the rc file written, all of it, and the repository files pointed at the front. */
export function describeYarnFront(state: YarnFrontState): string {
  const rc = state.rcText === '' ? `# yarn through the registry front: no rc file (the environment names the front)\n` : `# yarn through the registry front: ${state.rcPath} holds:\n${state.rcText.replace(/\n$/, '').split('\n').map((line) => `#   ${line}\n`).join('')}`;
  return `${rc}${state.rewritten.length > 0 ? `# ${state.rewritten.join(', ')} pointed at the front for the install, checked out again after it\n` : ''}`;
}

/** Points the repository's registry URLs at the front and writes the build rc file (run before the install, in /workspace). */
export async function prepareYarnFront(builder: DockerSandbox, identity: SnapshotIdentity, frontUrl: string): Promise<YarnFrontState> {
  const manager = identity.environment.packageManager?.name;
  if (manager !== 'yarn' && manager !== 'yarn-berry') throw new Error(`yarn through the registry front asked for a ${manager ?? 'package-manager-less'} build`);
  const registries = identity.environment.registries ?? [];
  const rewritten: string[] = [];
  for (const file of YARN_REGISTRY_FILES) {
    const read = await builder.raw(['cat', '--', file]);
    if (read.exitCode !== 0) continue;
    const text = read.stdout.toString('utf8');
    const pointed = pointRegistryUrlsAtFront(dropFrontCredentials(file, text, registries), registries, frontUrl);
    if (pointed === text) continue;
    await write(builder, file, pointed);
    rewritten.push(file);
  }
  const rc = yarnRcFile(manager, registries, frontUrl);
  if (rc.text !== '') await write(builder, rc.path, rc.text);
  return { rewritten, rcPath: rc.path, rcText: rc.text };
}

/** Puts the repository's files back as the commit has them and removes the build rc file (after the install, before anything is recorded). */
export async function restoreYarnFront(builder: DockerSandbox, state: YarnFrontState): Promise<void> {
  const paths = state.rewritten.map((file) => `'${file}'`).join(' ');
  const script = `${state.rewritten.length > 0 ? `git checkout -q -- ${paths} && ` : ''}rm -f '${state.rcPath}'`;
  const done = await builder.raw(['sh', '-c', script]);
  if (done.exitCode !== 0) throw new Error(`putting back the files pointed at the registry front failed: ${done.stderr.toString('utf8').trim()}`);
}

async function write(builder: DockerSandbox, path: string, text: string): Promise<void> {
  const done = await builder.raw(['sh', '-c', 'mkdir -p "$(dirname "$0")" && cat > "$0"', path], { stdin: Buffer.from(text) });
  if (done.exitCode !== 0) throw new Error(`writing ${path} for the registry front failed: ${done.stderr.toString('utf8').trim()}`);
}
