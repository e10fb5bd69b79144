import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { passedHeaders, readBody, relay } from './dep-cache-http';
import { isPackageDocument, pointTarballsAtFront, privateUpstreamUrl, type PrivateRegistry, type RegistryRefusal } from './private-registries';

/** A private registry's package document is read whole to point its tarballs at the front. */
const MAX_DOCUMENT_BYTES = 64 * 1024 * 1024;

/** What one build's listener routes besides the public upstream: its own registries, its URL, their refusals. */
export interface BuildRoute {
  registries: readonly PrivateRegistry[];
  url: string;
  refusals: RegistryRefusal[];
}

export interface PrivateRequest {
  method: string;
  path: string;
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
 * asked with the server's credential (never the build's), never kept, package documents pointed
 * back at the front; a 401/403 is recorded for the build's failure message.
 */
export async function answerPrivate(request: PrivateRequest): Promise<void> {
  const { method, path, registry, response, route } = request;
  const { authorization: _build, 'accept-encoding': _encoding, 'if-none-match': _etag, 'if-modified-since': _since, ...rest } = request.headers;
  const upstream = await request.fetch(method, privateUpstreamUrl(registry, path), { ...rest, authorization: registry.authorization });
  const status = upstream.statusCode ?? 502;
  if (status === 401 || status === 403) {
    route.refusals.push({ registry: registry.url.origin + registry.url.pathname, ...(registry.scope ? { scope: registry.scope } : {}), secret: registry.secret, status, path });
    request.logger?.warn({ registry: registry.url.origin, scope: registry.scope, secret: registry.secret, status, path }, 'a repository registry refused the credential of its secret');
  }
  const outHeaders = passedHeaders(upstream);
  if (method === 'GET' && status === 200 && isPackageDocument(upstream)) {
    const document = pointTarballsAtFront((await readBody(upstream, MAX_DOCUMENT_BYTES)).toString('utf8'), registry, route.url);
    delete outHeaders.etag;
    response.writeHead(200, { ...outHeaders, 'content-length': Buffer.byteLength(document) }).end(document);
    return;
  }
  await relay(upstream, response, status, outHeaders);
}
