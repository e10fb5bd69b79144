import type { IncomingMessage } from 'node:http';
import { DockhandError } from '../errors';

/**
 * The credential path of the registry front (`dep-cache.ts`): a repository's own registries
 * (`.dockhand/environment.yml` `registries:`), each with the secret that authenticates it, held by
 * the server. A build's package manager asks the front with no credential at all; for a path of a
 * configured scope (or every path, for a default registry) the front asks that registry with the
 * secret's `authorization` header, for that build's listener only. Nothing it fetches this way is
 * kept or served from the node's cache (a private package must not reach another repository's
 * build, and a public package of the same name must not stand in for it), and package documents
 * have their tarball URLs pointed back at the front, so the package manager never learns the
 * registry's address or needs to reach it.
 *
 * It will not: pass a build's own `authorization` header to a private registry (the build has none
 * to give), follow redirects to another origin with the credential, or accept a scope that is not
 * an npm scope.
 */

export interface PrivateRegistry {
  /** `@acme`: the scope's packages. Absent: the default registry (every package no scope names). */
  scope?: string;
  /** `python-index`: the repository's Python index (`dep-cache-pip.ts`), reached under its own front path, never by an npm path. */
  kind?: 'python-index';
  /** The registry's base URL (https, or http on loopback); a Python index's base, without its `simple/`. */
  url: URL;
  /** The `authorization` header the front sends upstream: `Bearer <the secret's value>` (npm), `Basic <user:value>` (a Python index). */
  authorization: string;
  /** The secret's name (messages name it, never its value). */
  secret: string;
}

/** A registry that refused the front's credential: what the build's failure names. */
export interface RegistryRefusal {
  registry: string;
  scope?: string;
  kind?: 'python-index';
  secret: string;
  status: number;
  path: string;
}

/** The scope a registry path asks for: `/@acme%2fname`, `/@acme/name/-/name-1.0.0.tgz` → `@acme`. */
export function scopeOfPath(path: string): string | undefined {
  const match = /^\/(@[^/%]+)(?:%2f|\/)/i.exec(path);
  return match?.[1]?.toLowerCase();
}

/** The repository's registry for a path: its scope's, else the default one, else none (the public upstream). */
export function registryFor(path: string, all: readonly PrivateRegistry[]): PrivateRegistry | undefined {
  const registries = all.filter((registry) => registry.kind === undefined);
  if (registries.length === 0) return undefined;
  const scope = scopeOfPath(path);
  return (scope ? registries.find((registry) => registry.scope?.toLowerCase() === scope) : undefined) ?? registries.find((registry) => registry.scope === undefined);
}

/** What messages call a registry: its scope, the Python index or the default registry. */
export function registryLabel(registry: { scope?: string | undefined; kind?: 'python-index' | undefined }): string {
  return registry.scope ?? (registry.kind === 'python-index' ? 'the Python index' : 'the default registry');
}

/**
 * The registry's URL for a front path (under the registry's own base path: `/artifactory/api/npm/npm-local/`);
 * undefined for a path that leaves that base once its dot segments are resolved (`/@acme/../../admin`):
 * the credential goes to the registry's own paths only.
 */
export function privateUpstreamUrl(registry: PrivateRegistry, path: string): URL | undefined {
  const base = registry.url.pathname.replace(/\/?$/, '/');
  const url = new URL(registry.url.origin + base.replace(/\/$/, '') + path);
  if (url.origin !== registry.url.origin || !url.pathname.startsWith(base)) return undefined;
  // Checked again on the path as the registry (or a proxy before it) reads it once decoded (issue
  // 31: `..%2f`, `%252f` passed with the credential attached): decoded once it must stay under the
  // base, and hold no encoded `/`, `\` or `.` still (a second decode away from climbing out).
  // `@acme%2fpkg` decodes to `@acme/pkg`, under the base: scoped packages pass.
  let decoded: string;
  try {
    decoded = decodeURIComponent(path.split(/[?#]/, 1)[0] ?? '');
  } catch {
    return undefined;
  }
  if (/%(?:2f|5c|2e)/i.test(decoded) || decoded.includes('\\')) return undefined;
  const once = new URL(registry.url.origin + base.replace(/\/$/, '') + decoded.replace(/[?#]/g, '_'));
  return once.origin === registry.url.origin && once.pathname.startsWith(base) ? url : undefined;
}

/** A package document with its tarball URLs at the registry turned into the front's. */
export function pointTarballsAtFront(document: string, registry: PrivateRegistry, frontUrl: string): string {
  const base = registry.url.origin + registry.url.pathname.replace(/\/$/, '');
  return document.split(`${base}/`).join(frontUrl.replace(/\/?$/, '/'));
}

/** Whether an upstream answer is a package document the front must rewrite: JSON, and a Python index's HTML simple pages. */
export function isPackageDocument(response: IncomingMessage, registry: PrivateRegistry): boolean {
  return (registry.kind === 'python-index' ? /json|html/i : /json/i).test(String(response.headers['content-type'] ?? ''));
}

/** The check made when a build's registries are resolved: https anywhere, plain http only on loopback. */
export function checkRegistryUrl(url: URL): string | undefined {
  if (url.protocol === 'https:') return undefined;
  const loopback = url.hostname === 'localhost' || url.hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(url.hostname);
  if (url.protocol === 'http:' && loopback) return undefined;
  return `${url.href}: a registry the server sends a credential to must be https:// (plain http only on this host's loopback)`;
}

/** The server's side of a repository's secrets, as the snapshot build asks for them (`secrets/service.ts` implements it). */
export type RegistryCredentials = (repo: string, names: readonly string[], usedBy: string) => Promise<{ values: Map<string, string>; missing: string[] }>;

/** A recipe's registries (`EnvironmentRecipe.registries`): scope, URL and the secret's name. */
export interface RegistryRecipe {
  scope?: string | undefined;
  url: string;
  token: string;
}

/** A recipe's Python index (`EnvironmentRecipe.pythonIndex`): its simple URL, the Basic user name and the secret's name. */
export interface PythonIndexRecipe {
  url: string;
  username?: string | undefined;
  token: string;
}

/** PyPI's user name for a token, the default of `pythonIndex.username`. */
export const DEFAULT_PYTHON_INDEX_USER = '__token__';

export interface BuildRegistriesInput {
  repo: string;
  /** `snapshot build <key>`: the secrets' last use. */
  usedBy: string;
  registries: readonly RegistryRecipe[];
  /** The repository's Python index, if it names one. */
  pythonIndex?: PythonIndexRecipe | undefined;
  credentials: RegistryCredentials | undefined;
  /** URL prefixes an admin allows repositories' registries under (`DOCKHAND_PRIVATE_REGISTRIES`). */
  allowed: readonly string[];
  /** Why the build cannot use the front (a yarn build, the cache off, no egress proxy); undefined when it can. */
  frontMissing: string | undefined;
  /** Why the build's pip cannot use the front (the cache off, no Python install); undefined when it can. */
  pythonFrontMissing?: string | undefined;
}

/**
 * The build's registries with their credentials, or an error naming what is missing and the one
 * command or setting that fixes it. Not a remembered build failure (a `DockhandError`, not
 * `SnapshotBuildFailed`): once the secret is set the next attempt builds.
 */
export async function resolveBuildRegistries(input: BuildRegistriesInput): Promise<PrivateRegistry[]> {
  const index = input.pythonIndex;
  if (input.registries.length === 0 && !index) return [];
  const file = '.dockhand/environment.yml';
  if (input.registries.length > 0 && input.frontMissing) throw new DockhandError('sandbox_unavailable', `${file} names registries, but ${input.frontMissing}`, { field: `${file}:registries`, hint: 'registries with credentials are reached only through the server\'s registry front: an npm, pnpm or yarn build with DOCKHAND_DEP_CACHE on' });
  if (index && input.pythonFrontMissing) throw new DockhandError('sandbox_unavailable', `${file} names a pythonIndex, but ${input.pythonFrontMissing}`, { field: `${file}:pythonIndex`, hint: 'a Python index with a credential is reached only through the server\'s registry front: a Python build with DOCKHAND_DEP_CACHE on' });
  const wanted: Array<{ field: string; url: string }> = [...input.registries.map((registry) => ({ field: 'registries', url: registry.url })), ...(index ? [{ field: 'pythonIndex', url: index.url }] : [])];
  for (const { field, url: text } of wanted) {
    const url = new URL(text);
    const problem = checkRegistryUrl(url);
    if (problem) throw new DockhandError('sandbox_unavailable', `${file}: ${field}: ${problem}`, { field: `${file}:${field}` });
    if (!input.allowed.some((prefix) => url.href.startsWith(prefix.replace(/\/?$/, '/')) || url.href === prefix)) {
      throw new DockhandError('sandbox_unavailable', `${file}: ${field}: ${url.href} is not a registry this server may send credentials to`, {
        field: `${file}:${field}`,
        hint: `an admin allows it with DOCKHAND_PRIVATE_REGISTRIES=${url.origin}${url.pathname} (comma-separated URL prefixes)`,
      });
    }
  }
  if (!input.credentials) throw new DockhandError('sandbox_unavailable', `${file} names ${input.registries.length > 0 ? 'registries' : 'a pythonIndex'}, but this server holds no repository secrets`);
  const names = [...input.registries.map((registry) => registry.token), ...(index ? [index.token] : [])];
  const { values, missing } = await input.credentials(input.repo, names, input.usedBy);
  if (missing.length > 0) {
    const labels = [...input.registries.filter((registry) => missing.includes(registry.token)).map((registry) => registry.scope ?? 'the default registry'), ...(index && missing.includes(index.token) ? ['the Python index'] : [])];
    throw new DockhandError('sandbox_unavailable', `${input.repo} has no secret ${missing.join(', ')}, which ${file} names for ${labels.join(', ')}`, {
      field: missing[0] ?? '',
      hint: missing.map((name) => `dockhand secret set ${input.repo} ${name} --from-file <token file>`).join('; '),
    });
  }
  const npm = input.registries.map((registry): PrivateRegistry => ({
    ...(registry.scope ? { scope: registry.scope } : {}),
    url: new URL(registry.url),
    authorization: `Bearer ${values.get(registry.token) ?? ''}`,
    secret: registry.token,
  }));
  if (!index) return npm;
  const basic = Buffer.from(`${index.username ?? DEFAULT_PYTHON_INDEX_USER}:${values.get(index.token) ?? ''}`).toString('base64');
  return [...npm, { kind: 'python-index', url: pythonIndexBase(new URL(index.url)), authorization: `Basic ${basic}`, secret: index.token }];
}

/**
 * The base a Python index's files live under: its simple URL less the last `simple/` (`+simple/`
 * for devpi) segment, where pypiserver, devpi, Artifactory, Nexus and GitLab keep their files
 * (`/packages/…`, `/+f/…`); an index URL without that segment is its own base.
 */
export function pythonIndexBase(indexUrl: URL): URL {
  const path = indexUrl.pathname.replace(/\/?$/, '/');
  return new URL(indexUrl.origin + path.replace(/(^|\/)\+?simple\/$/, '$1'));
}

/** The failure of a build whose registry refused the server's credential: the registry, its answer, the secret and the fix. */
export function describeRefusals(repo: string, refusals: readonly RegistryRefusal[]): { message: string; hint: string } | undefined {
  const first = refusals[0];
  if (!first) return undefined;
  const secrets = [...new Set(refusals.map((refusal) => refusal.secret))];
  return {
    message: `registry ${first.registry} answered ${first.status} (${first.status === 401 ? 'not authenticated' : 'forbidden'}) for ${registryLabel(first)} with the token of secret ${first.secret}${refusals.length > 1 ? ` (and ${refusals.length - 1} more refusal(s))` : ''}`,
    hint: `set a token that registry accepts: ${secrets.map((name) => `dockhand secret set ${repo} ${name} --from-file <token file>`).join('; ')}`,
  };
}
