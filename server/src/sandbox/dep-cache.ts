import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { Agent as HttpAgent, createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { join } from 'node:path';
import { createSecureContext, rootCertificates } from 'node:tls';
import type { Logger } from 'pino';
import { z } from 'zod';
import { listenForPeer, PeerGate } from './build-network-peer';
import { passedHeaders, relay } from './dep-cache-http';
import { PIP_FRONT_PREFIX, pipFrontBase, pythonIndexOf } from './dep-cache-pip';
import { answerPrivate, type BuildRoute } from './dep-cache-private';
import { registryFor, type PrivateRegistry, type RegistryRefusal } from './private-registries';

/**
 * The node's dependency cache: a plain-HTTP npm registry front that snapshot builds use as their
 * registry (`npm_config_registry`). It runs in the server process on the egress network's gateway,
 * fetches from the real registry over TLS itself, and keeps package tarballs (immutable: a
 * published name@version never changes) under `<dataDir>/dep-cache/`, so a cold build of a
 * repository whose dependencies another build already fetched reads them from the host's disk.
 *
 * What keeps it read-only for builds (the blast radius): a build runs hostile code, and all it can
 * do here is ask for a URL of the one upstream registry with GET or HEAD. Only this process writes
 * the directory, only with the bytes the upstream served over TLS for that exact tarball path, and
 * never a response to a request that carried credentials (a private package must not reach another
 * repository's build). Nothing a build sends is stored. Entries are content-checked on every read
 * (sha512 and size recorded at write; a mismatch is a miss and the entry is replaced), and the
 * package manager still checks each tarball against its lockfile's integrity. Package documents
 * (version lists) are passed through uncached: they change.
 *
 * A repository's own registries with their credentials (`private-registries.ts`) are routed per
 * build listener: the server adds the credential upstream, and what they serve is never kept. Its
 * Python index is one of them, under `/-/pip/` (`dep-cache-pip.ts`). A listener serves one build
 * container, by its address: any other peer is reset before a byte is read (`build-network-peer.ts`),
 * so another build never reaches this build's credentials or its counts.
 *
 * It will not: cache pip wheels or yarn classic / berry downloads (those keep the CONNECT proxy),
 * nor anything outside the upstream's origin.
 */

/** `/name/-/name-1.2.3.tgz` or `/@scope/name/-/name-1.2.3.tgz`: the npm registry's tarball paths. */
const TARBALL_PATH = /^\/(?:@[a-z0-9][\w.-]*\/)?[a-z0-9][\w.-]*\/-\/[a-z0-9][\w.-]*\.tgz$/i;
/** Request headers passed upstream (no host, proxy or connection headers). */
const FORWARDED_HEADERS = ['accept', 'accept-encoding', 'user-agent', 'npm-command', 'npm-session', 'pnpm-session', 'referer', 'if-none-match', 'if-modified-since', 'authorization'];
/** Tarballs larger than this are passed through, not kept. */
const MAX_ENTRY_BYTES = 256 * 1024 * 1024;

const EntryRecord = z.object({ path: z.string(), sha512: z.string().regex(/^[A-Za-z0-9+/]+={0,2}$/), size: z.number().int().nonnegative() });

export interface DependencyCacheStats {
  /** Tarballs served from the host's disk. */
  hits: number;
  /** Tarballs fetched from upstream (and kept, when they fit). */
  misses: number;
  /** Entries found damaged on read (replaced from upstream). */
  corrupt: number;
  /** Requests passed through uncached (package documents, requests with credentials). */
  passedThrough: number;
  /** Methods other than GET/HEAD and upstream failures. */
  refused: number;
  bytesFromCache: number;
  bytesFromUpstream: number;
  evictions: number;
}

export interface DependencyCacheOptions {
  /** `<dataDir>/dep-cache`. Created when missing. */
  dir: string;
  /** The registry it fronts; default the public npm registry. */
  upstream?: string;
  /** Size bound of the kept tarballs; the least recently used go first. Default 4 GiB. */
  maxBytes?: number;
  /** Extra CA bundle (PEM) for the upstream's TLS, added to Node's roots. */
  caBundle?: string;
  logger?: Logger;
}

/** What `/metrics` shows of a node's cache: its counts since start, what it keeps now and its bound. */
export interface DependencyCacheMetrics {
  stats: DependencyCacheStats;
  keptBytes: number;
  maxBytes: number;
}

/** The default bound of the kept tarballs (`DOCKHAND_DEP_CACHE_MAX_GIB`). */
export const DEFAULT_DEP_CACHE_MAX_BYTES = 4 * 1024 * 1024 * 1024;

/** One build's listener: its registry URL and its own counts. */
export interface DependencyCacheListener {
  readonly url: string;
  readonly host: string;
  readonly stats: DependencyCacheStats;
  /** A repository's registries that refused the server's credential during this build (401/403). */
  readonly refusals: RegistryRefusal[];
  /** Requests sent upstream with each repository secret during this build, by secret name. */
  readonly secretUses: ReadonlyMap<string, number>;
  /** Serve the build container at `address` (until then every connection is refused). */
  serve(address: string): void;
  /** Connections refused for coming from another address than the build's. */
  readonly foreign: number;
  close(): Promise<void>;
}

/** What one build's listener routes besides the public upstream. */
export interface ListenOptions {
  /** The repository's own registries with their credentials (`private-registries.ts`). */
  registries?: readonly PrivateRegistry[];
  /** The one address served from the start; without it none is until `serve` names it. */
  peer?: string;
}

function readCaBundle(path: string, logger: Logger | undefined): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    logger?.warn({ path, err: error instanceof Error ? error.message : String(error) }, 'dependency cache: extra CA bundle unreadable; upstream TLS uses the default roots');
    return '';
  }
}

/** Resolves when the build's response can take more, or is gone (both listeners removed either way). */
function drainedOrClosed(response: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      response.off('drain', done);
      response.off('close', done);
      resolve();
    };
    response.once('drain', done);
    response.once('close', done);
  });
}

function emptyStats(): DependencyCacheStats {
  return { hits: 0, misses: 0, corrupt: 0, passedThrough: 0, refused: 0, bytesFromCache: 0, bytesFromUpstream: 0, evictions: 0 };
}

function sha512(body: Buffer): string {
  return createHash('sha512').update(body).digest('base64');
}

/** One line for the build log and the server's log. */
export function describeCacheStats(stats: DependencyCacheStats): string {
  const mb = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);
  return `${stats.hits} hits (${mb(stats.bytesFromCache)} MB from the node's cache), ${stats.misses} misses (${mb(stats.bytesFromUpstream)} MB from upstream), ${stats.corrupt} corrupt entries replaced, ${stats.passedThrough} passed through`;
}

export class DependencyCache {
  readonly dir: string;
  readonly upstream: URL;
  readonly maxBytes: number;
  /** Counts over every build this process served. */
  readonly stats: DependencyCacheStats = emptyStats();
  private readonly agent: Agent;
  private readonly plainAgent = new HttpAgent({ keepAlive: true, maxSockets: 32 });
  private readonly logger: Logger | undefined;
  private totalBytes: number | undefined;
  private evicting: Promise<void> | undefined;
  /** Tarballs being written, by path. */
  private readonly writing = new Map<string, Promise<void>>();
  /** Listeners of builds still running, closed with the cache. */
  private readonly listeners = new Set<DependencyCacheListener>();
  private closed = false;

  constructor(options: DependencyCacheOptions) {
    this.dir = options.dir;
    const upstream = new URL(options.upstream ?? 'https://registry.npmjs.org/');
    if (upstream.protocol !== 'https:') throw new Error(`dependency cache upstream ${upstream.href} must be an https:// registry URL`);
    this.upstream = upstream;
    this.maxBytes = options.maxBytes ?? DEFAULT_DEP_CACHE_MAX_BYTES;
    const ca = options.caBundle ? [...rootCertificates, readCaBundle(options.caBundle, options.logger)] : undefined;
    // One TLS context for every connection: given `ca`, each new connection would parse the whole
    // bundle again (the default roots and the extra CA: about 10 ms of CPU each), which made a cold
    // build through the front ~0.5 s slower per 48 tarballs than fetching them directly.
    this.agent = new Agent({ keepAlive: true, maxSockets: 32, ...(ca ? { secureContext: createSecureContext({ ca }) } : {}) });
    this.logger = options.logger;
  }

  private tarballDir(): string {
    return join(this.dir, 'npm-tarballs');
  }

  private entryPaths(path: string): { content: string; record: string } {
    const key = createHash('sha256').update(path).digest('hex');
    const base = join(this.tarballDir(), key.slice(0, 2), key);
    return { content: `${base}.tgz`, record: `${base}.json` };
  }

  /** The upstream URL for a request path (always the upstream's origin, whatever the path). */
  upstreamUrl(path: string): URL {
    return new URL(this.upstream.origin + this.upstream.pathname.replace(/\/$/, '') + path);
  }

  /** The kept tarball for `path`, checked against its record; undefined for a miss, 'damaged' (and removed) when it does not match. */
  async read(path: string): Promise<Buffer | 'damaged' | undefined> {
    const paths = this.entryPaths(path);
    let recordText: string;
    try {
      recordText = await readFile(paths.record, 'utf8');
    } catch {
      return undefined;
    }
    try {
      const record = EntryRecord.parse(JSON.parse(recordText));
      const body = await readFile(paths.content);
      if (record.path !== path || record.size !== body.length || record.sha512 !== sha512(body)) throw new Error('content does not match its record');
      const now = new Date();
      await utimes(paths.content, now, now).catch(() => undefined);
      return body;
    } catch (error) {
      this.logger?.warn({ path, err: error instanceof Error ? error.message : String(error) }, 'dependency cache entry damaged; fetching it again');
      await rm(paths.content, { force: true });
      await rm(paths.record, { force: true });
      return 'damaged';
    }
  }

  /** Keeps `body` as the tarball at `path` (content, then its record; each renamed into place). */
  async write(path: string, body: Buffer): Promise<void> {
    const paths = this.entryPaths(path);
    await this.size();
    await mkdir(join(paths.content, '..'), { recursive: true });
    const suffix = `.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    await writeFile(paths.content + suffix, body);
    await rename(paths.content + suffix, paths.content);
    await writeFile(paths.record + suffix, JSON.stringify({ path, sha512: sha512(body), size: body.length }));
    await rename(paths.record + suffix, paths.record);
    this.totalBytes = (this.totalBytes ?? 0) + body.length;
    if (this.totalBytes > this.maxBytes && !this.evicting) {
      this.evicting = this.evict().finally(() => (this.evicting = undefined));
      await this.evicting;
    }
  }

  private async entries(): Promise<Array<{ content: string; record: string; size: number; used: number }>> {
    const found: Array<{ content: string; record: string; size: number; used: number }> = [];
    let shards: string[];
    try {
      shards = await readdir(this.tarballDir());
    } catch {
      return found;
    }
    for (const shard of shards) {
      const names = await readdir(join(this.tarballDir(), shard)).catch(() => [] as string[]);
      for (const name of names) {
        if (!name.endsWith('.tgz')) continue;
        const content = join(this.tarballDir(), shard, name);
        const info = await stat(content).catch(() => undefined);
        if (info) found.push({ content, record: content.replace(/\.tgz$/, '.json'), size: info.size, used: info.mtimeMs });
      }
    }
    return found;
  }

  /** Bytes of kept tarballs (scanned once, then tracked). */
  async size(): Promise<number> {
    if (this.totalBytes === undefined) this.totalBytes = (await this.entries()).reduce((sum, entry) => sum + entry.size, 0);
    return this.totalBytes;
  }

  /** Counts over every build this process served, the bytes kept (scanned once) and the bound. */
  async metrics(): Promise<DependencyCacheMetrics> {
    return { stats: { ...this.stats }, keptBytes: await this.size(), maxBytes: this.maxBytes };
  }

  /** Removes the least recently used tarballs until the cache is at 80 % of its bound. */
  private async evict(): Promise<void> {
    const entries = (await this.entries()).sort((a, b) => a.used - b.used);
    let total = entries.reduce((sum, entry) => sum + entry.size, 0);
    for (const entry of entries) {
      if (total <= this.maxBytes * 0.8) break;
      await rm(entry.record, { force: true });
      await rm(entry.content, { force: true });
      total -= entry.size;
      this.stats.evictions += 1;
    }
    this.totalBytes = total;
  }

  /** Starts a listener for one build on `host` (the egress network's gateway). */
  async listen(host: string, options: ListenOptions = {}): Promise<DependencyCacheListener> {
    // A build that starts while the server shuts down fetches through the proxy instead.
    if (this.closed) throw new Error('dependency cache is closed');
    await mkdir(this.tarballDir(), { recursive: true });
    const stats = emptyStats();
    const count = (field: keyof DependencyCacheStats, amount = 1): void => {
      stats[field] += amount;
      this.stats[field] += amount;
    };
    const sockets = new Set<Socket>();
    const route: BuildRoute = { registries: options.registries ?? [], url: '', refusals: [], uses: new Map() };
    const server: Server = createServer((request, response) => {
      this.handle(request, response, count, route).catch((error: unknown) => {
        count('refused');
        this.logger?.warn({ url: request.url, err: error instanceof Error ? error.message : String(error) }, 'dependency cache request failed');
        // A miss cut midway was ended with its error (streamMiss): nothing more to say on it.
        if (response.destroyed) return;
        if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain' });
        response.end(`dockhand dependency cache: upstream request failed: ${error instanceof Error ? error.message : String(error)}\n`);
      });
    });
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    const gate = new PeerGate('registry front', this.logger);
    if (options.peer !== undefined) gate.serve(options.peer);
    const listening = await listenForPeer(server, gate, host, 0);
    let closing: Promise<void> | undefined;
    route.url = `http://${host}:${listening.port}/`;
    const listener: DependencyCacheListener = {
      url: route.url,
      host,
      stats,
      refusals: route.refusals,
      secretUses: route.uses,
      serve: (address) => gate.serve(address),
      get foreign() {
        return gate.foreign;
      },
      close: () => {
        closing ??= (async () => {
          for (const socket of sockets) socket.destroy();
          await listening.close();
          this.listeners.delete(listener);
          await this.idle();
        })();
        return closing;
      },
    };
    this.listeners.add(listener);
    if (this.closed) {
      await listener.close();
      throw new Error('dependency cache is closed');
    }
    return listener;
  }

  private async handle(request: IncomingMessage, response: ServerResponse, count: (field: keyof DependencyCacheStats, amount?: number) => void, route: BuildRoute): Promise<void> {
    // Whatever a client sends is read and dropped: nothing of it is kept or passed on.
    request.resume();
    const method = request.method ?? 'GET';
    const path = request.url ?? '/';
    if ((method !== 'GET' && method !== 'HEAD') || !path.startsWith('/')) {
      count('refused');
      response.writeHead(405, { 'content-type': 'text/plain', allow: 'GET, HEAD' }).end('dockhand dependency cache: read-only (GET and HEAD of registry paths only)\n');
      return;
    }
    const headers: Record<string, string> = {};
    for (const name of FORWARDED_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    const fetch = (verb: string, url: URL, sent: Record<string, string>): Promise<IncomingMessage> => this.fetchUrl(verb, url, sent);
    if (path.startsWith(PIP_FRONT_PREFIX)) {
      count('passedThrough');
      const index = pythonIndexOf(route.registries);
      if (!index) {
        response.writeHead(404, { 'content-type': 'text/plain' }).end('dockhand registry front: this build\'s repository names no Python index (.dockhand/environment.yml pythonIndex)\n');
        return;
      }
      await answerPrivate({ method, path: path.slice(PIP_FRONT_PREFIX.length - 1), frontUrl: pipFrontBase(route.url), headers, registry: index, response, route, fetch, logger: this.logger });
      return;
    }
    const registry = registryFor(path, route.registries);
    if (registry) {
      count('passedThrough');
      await answerPrivate({ method, path, frontUrl: route.url, headers, registry, response, route, fetch, logger: this.logger });
      return;
    }
    // A tarball fetched with the build's credentials may be private: never kept, never served from here.
    const cacheable = method === 'GET' && TARBALL_PATH.test(path) && !headers.authorization;
    if (cacheable) {
      await this.writing.get(path);
      const kept = await this.read(path);
      if (kept === 'damaged') count('corrupt');
      else if (kept) {
        count('hits');
        count('bytesFromCache', kept.length);
        response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': kept.length, 'x-dockhand-cache': 'hit' }).end(kept);
        return;
      }
      delete headers['accept-encoding'];
      delete headers['if-none-match'];
      delete headers['if-modified-since'];
    } else count('passedThrough');
    const upstream = await this.fetchUpstream(method, path, headers);
    const announced = Number(upstream.headers['content-length'] ?? 0);
    if (cacheable && upstream.statusCode === 200 && announced <= MAX_ENTRY_BYTES) {
      const { body, size } = await this.streamMiss(upstream, response, announced);
      count('misses');
      count('bytesFromUpstream', size);
      // Larger than the bound (no length announced): passed on, not kept.
      if (!body) return;
      // Answered while it is written; a request for the same path meanwhile waits for the write (a hit).
      const writing = this.write(path, body)
        .catch((error: unknown) => this.logger?.warn({ path, err: error instanceof Error ? error.message : String(error) }, 'dependency cache could not keep a tarball'))
        .finally(() => this.writing.delete(path));
      this.writing.set(path, writing);
      return;
    }
    await relay(upstream, response, upstream.statusCode ?? 502, passedHeaders(upstream));
  }

  /**
   * A miss goes to the build as it arrives (store-and-forward cost a cold build a round trip per
   * tarball) and is returned whole to be kept; an upstream that fails midway ends the build's
   * response with an error (the package manager retries or fails on it), never a short 200 kept.
   */
  private async streamMiss(upstream: IncomingMessage, response: ServerResponse, announced: number): Promise<{ body: Buffer | undefined; size: number }> {
    response.writeHead(200, { 'content-type': 'application/octet-stream', ...(announced > 0 ? { 'content-length': announced } : {}), 'x-dockhand-cache': 'miss' });
    let chunks: Buffer[] | undefined = [];
    let size = 0;
    try {
      for await (const chunk of upstream as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > MAX_ENTRY_BYTES) chunks = undefined;
        chunks?.push(chunk);
        if (response.destroyed) throw new Error('the build closed the connection');
        if (!response.write(chunk)) await drainedOrClosed(response);
      }
      if (announced > 0 && size !== announced) throw new Error(`upstream sent ${size} bytes of ${announced} announced`);
    } catch (error) {
      response.destroy(error instanceof Error ? error : new Error(String(error)));
      throw error;
    }
    response.end();
    return { body: chunks ? Buffer.concat(chunks) : undefined, size };
  }

  private fetchUpstream(method: string, path: string, headers: Record<string, string>): Promise<IncomingMessage> {
    return this.fetchUrl(method, this.upstreamUrl(path), headers);
  }

  private fetchUrl(method: string, url: URL, headers: Record<string, string>): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
      const outgoing = send(url, { method, headers, agent: url.protocol === 'http:' ? this.plainAgent : this.agent, timeout: 120_000 }, resolve);
      outgoing.on('timeout', () => outgoing.destroy(new Error(`upstream ${url.host} timed out`)));
      outgoing.on('error', reject);
      outgoing.end();
    });
  }

  /** Resolves when every tarball being written is on disk. */
  async idle(): Promise<void> {
    await Promise.all([...this.writing.values()]);
  }

  /**
   * Closes the listeners of builds still running (those builds' fetches fail, as any fetch of a
   * build cut short by shutdown does), waits for the tarballs being written, and ends the
   * keep-alive connections to the upstream registry. Later `listen` calls are refused.
   */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.listeners].map((listener) => listener.close()));
    await this.idle();
    this.agent.destroy();
    this.plainAgent.destroy();
  }
}
