import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { passedHeaders, readBody, relay } from './dep-cache-http';
import { isPackageDocument, pointTarballsAtFront, privateUpstreamUrl, registryLabel, type PrivateRegistry, type RegistryRefusal } from './private-registries';

/** A private registry's package document is read whole to point its tarballs at the front. */
const MAX_DOCUMENT_BYTES = 64 * 1024 * 1024;

/** What one build's listener routes besides the public upstream: its own registries, its URL, their refusals, the secrets' uses. */
export interface BuildRoute {
  registries: readonly PrivateRegistry[];
  url: string;
  refusals: RegistryRefusal[];
  /** Requests sent upstream with each secret's credential, by secret name (the build's audit: `describeSecretUses`). */
  uses: Map<string, number>;
}

/** One repository secret's use in a snapshot build, by name only: the audit line of the build log, the server log and the build's last progress event. */
export interface SecretUse {
  name: string;
  step: 'registry front' | 'setup.sh';
  /** `registry front`: the scope it authenticated (absent: the default registry, or the Python index by `kind`) and the requests sent upstream with it. */
  scope?: string;
  kind?: 'python-index';
  requests?: number;
}

/** The build's secret uses: each registry's secret with its request count, then setup.sh's secrets. */
export function secretUses(registries: readonly PrivateRegistry[], uses: ReadonlyMap<string, number>, setupSecrets: readonly string[]): SecretUse[] {
  const front = registries.map((registry): SecretUse => ({ name: registry.secret, step: 'registry front', ...(registry.scope ? { scope: registry.scope } : {}), ...(registry.kind ? { kind: registry.kind } : {}), requests: uses.get(registry.secret) ?? 0 }));
  return [...front, ...setupSecrets.map((name): SecretUse => ({ name, step: 'setup.sh' }))];
}

/** `NPM_ACME (registry front for @acme: 3 requests upstream), SENTRY_AUTH (setup.sh)`: names, never values. */
export function describeSecretUses(uses: readonly SecretUse[]): string {
  return uses
    .map((use) => (use.step === 'setup.sh' ? `${use.name} (given to setup.sh)` : `${use.name} (registry front for ${registryLabel(use)}: ${use.requests ?? 0} request${use.requests === 1 ? '' : 's'} upstream)`))
    .join(', ');
}

export interface PrivateRequest {
  method: string;
  /** The path under the registry's base URL (a Python index's: less the front's `/-/pip` prefix). */
  path: string;
  /** Where the front serves this registry's base: the listener's URL (npm), `<url>-/pip/` (a Python index). */
  frontUrl: string;
  /** The build's forwarded headers; its own authorization and conditional headers are dropped. */
  headers: Record<string, string>;
  registry: PrivateRegistry;
  response: ServerResponse;
  route: BuildRoute;
  fetch: (method: string, url: URL, headers: Record<string, string>) => Promise<IncomingMessage>;
  logger?: Logger | undefined;
}

/**
 * A path of one of the build's own registries (the registry front's private path, `dep-cache.ts`):
 * asked with the server's credential (never the build's), never kept, package documents (npm's
 * JSON, a Python index's simple pages) pointed back at the front; a 401/403 is recorded for the
 * build's failure message. A path that leaves the registry's base is refused, not sent.
 */
export async function answerPrivate(request: PrivateRequest): Promise<void> {
  const { method, path, registry, response, route } = request;
  const { authorization: _build, 'accept-encoding': _encoding, 'if-none-match': _etag, 'if-modified-since': _since, ...rest } = request.headers;
  const url = privateUpstreamUrl(registry, path);
  if (!url) {
    response.writeHead(400, { 'content-type': 'text/plain' }).end(`dockhand registry front: ${path} leaves the registry's base path\n`);
    return;
  }
  route.uses.set(registry.secret, (route.uses.get(registry.secret) ?? 0) + 1);
  const upstream = await request.fetch(method, url, { ...rest, authorization: registry.authorization });
  const status = upstream.statusCode ?? 502;
  if (status === 401 || status === 403) {
    route.refusals.push({ registry: registry.url.origin + registry.url.pathname, ...(registry.scope ? { scope: registry.scope } : {}), ...(registry.kind ? { kind: registry.kind } : {}), secret: registry.secret, status, path });
    request.logger?.warn({ registry: registry.url.origin, registryName: registryLabel(registry), secret: registry.secret, status, path }, 'a repository registry refused the credential of its secret');
  }
  const outHeaders = passedHeaders(upstream);
  // A redirect within the registry (an index's `/simple/name` → `/simple/name/`) stays at the front.
  if (typeof outHeaders.location === 'string') outHeaders.location = pointTarballsAtFront(new URL(outHeaders.location, url).href, registry, request.frontUrl);
  if (method === 'GET' && status === 200 && isPackageDocument(upstream, registry)) {
    const document = pointTarballsAtFront((await readBody(upstream, MAX_DOCUMENT_BYTES)).toString('utf8'), registry, request.frontUrl);
    delete outHeaders.etag;
    response.writeHead(200, { ...outHeaders, 'content-length': Buffer.byteLength(document) }).end(document);
    return;
  }
  await relay(upstream, response, status, outHeaders);
}
