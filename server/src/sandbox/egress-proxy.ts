import { readFileSync } from 'node:fs';
import { lookup } from 'node:dns/promises';
import { createServer, type Server } from 'node:http';
import { BlockList, connect, isIP, type Socket } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { Logger } from 'pino';
import { listenForPeer, PeerGate } from './build-network-peer';

/** registry.yarnpkg.com serves the npm registry's packages; yarn's lockfiles and berry's default name it. */
export const DEFAULT_REGISTRY_HOSTS = ['registry.npmjs.org', 'registry.yarnpkg.com', 'pypi.org', 'files.pythonhosted.org', 'deb.debian.org', 'proxy.golang.org'];

/**
 * The only way out of a dependency-install container: an HTTP CONNECT proxy that opens tunnels
 * to port 443 of allowlisted host names and refuses everything else (other hosts, other ports,
 * IP literals, plain HTTP requests). A name is resolved here and every address it resolves to is
 * checked (loopback, link-local such as cloud metadata, private ranges and this host's own
 * addresses are refused); the tunnel then goes to the checked address, so a second answer from
 * DNS cannot rebind it. It runs in the server process, listening on the gateway IP of the
 * --internal Docker network the install container sits on (`build-network.ts` drops everything
 * else the network sends the host). It does not look inside TLS; that the tunnel reaches the
 * named host is all it promises. It serves one build: connections from any address but that
 * build container's are reset unread (`build-network-peer.ts`).
 */
export interface EgressProxy {
  readonly host: string;
  readonly port: number;
  /** Targets clients asked for and were refused (for logs and tests). */
  readonly refused: string[];
  /** Serve the build container at `address` (until then every connection is refused). */
  serve(address: string): void;
  /** Connections refused for coming from another address than the build's. */
  readonly foreign: number;
  close(): Promise<void>;
}

export type Resolve = (host: string) => Promise<{ address: string; family: number }[]>;

const defaultResolve: Resolve = (host) => lookup(host, { all: true, verbatim: true });

export function isAllowedTarget(target: string, allow: readonly string[]): boolean {
  const match = /^([a-zA-Z0-9.-]+):(\d+)$/.exec(target);
  if (!match) return false;
  const [, host = '', port] = match;
  const name = host.toLowerCase();
  // IP literals never pass, whatever the list says: only names are allowlisted.
  if (isIP(name) !== 0 || /^[\d.]+$/.test(name)) return false;
  // "*.example.com" (policy.yml's form) allows every subdomain, not the domain itself.
  return port === '443' && allow.some((entry) => entry === name || (entry.startsWith('*.') && name.endsWith(entry.slice(1))));
}

/**
 * Whether an allowlist entry a repository asks for (a host or "*.domain") lies within the
 * fleet's list an admin set: the same host, a host a fleet pattern covers, or a pattern at or
 * under a fleet pattern.
 */
export function withinAllowlist(entry: string, fleet: readonly string[]): boolean {
  const asked = entry.toLowerCase();
  return fleet.some((raw) => {
    const allowed = raw.toLowerCase();
    if (allowed === asked) return true;
    if (!allowed.startsWith('*.')) return false;
    const suffix = allowed.slice(1);
    return asked.startsWith('*.') ? asked.slice(1).endsWith(suffix) : asked.endsWith(suffix);
  });
}

/** Addresses no tunnel may reach, whatever a name resolves to. */
const NEVER = new BlockList();
for (const [network, prefix] of [['0.0.0.0', 8], ['127.0.0.0', 8], ['169.254.0.0', 16], ['224.0.0.0', 4], ['240.0.0.0', 4]] as const) NEVER.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [['::', 128], ['::1', 128], ['fe80::', 10], ['ff00::', 8]] as const) NEVER.addSubnet(network, prefix, 'ipv6');
/** Private and shared ranges: refused unless the admin named the host as a private registry. */
const PRIVATE = new BlockList();
for (const [network, prefix] of [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['100.64.0.0', 10], ['192.0.0.0', 24], ['198.18.0.0', 15]] as const) PRIVATE.addSubnet(network, prefix, 'ipv4');
PRIVATE.addSubnet('fc00::', 7, 'ipv6');

function readProc(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

/**
 * This host's own addresses, read at each check (bridges come and go). Node's list leaves out
 * interfaces without a carrier (an idle Docker bridge such as docker0 at 172.17.0.1), so the
 * kernel's own tables are read too: the LOCAL entries of /proc/net/fib_trie and /proc/net/if_inet6.
 */
function ownAddresses(): BlockList {
  const own = new BlockList();
  for (const entries of Object.values(networkInterfaces())) for (const entry of entries ?? []) own.addAddress(entry.address.replace(/%.*$/, ''), entry.family === 'IPv6' ? 'ipv6' : 'ipv4');
  let last: string | undefined;
  for (const line of readProc('/proc/net/fib_trie').split('\n')) {
    const address = /\|--\s+(\d+\.\d+\.\d+\.\d+)/.exec(line)?.[1];
    if (address) last = address;
    else if (last && /\/32 host LOCAL/.test(line)) own.addAddress(last, 'ipv4');
  }
  for (const line of readProc('/proc/net/if_inet6').split('\n')) {
    const hex = /^([0-9a-f]{32})\s/i.exec(line)?.[1];
    if (hex) own.addAddress(hex.match(/.{4}/g)?.join(':') ?? '', 'ipv6');
  }
  return own;
}

/** Why `address` may not be reached, or undefined when it may. IPv4-mapped IPv6 is judged as its IPv4. */
export function forbiddenAddress(address: string, options: { privateAllowed?: boolean } = {}): string | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  const plain = (mapped ?? address).toLowerCase();
  const family = isIP(plain) === 6 ? 'ipv6' : 'ipv4';
  if (isIP(plain) === 0) return 'not an IP address';
  if (NEVER.check(plain, family)) return 'a loopback, link-local, multicast or unspecified address';
  if (ownAddresses().check(plain, family)) return "one of this host's own addresses";
  if (!options.privateAllowed && PRIVATE.check(plain, family)) return 'a private network address';
  return undefined;
}

export interface EgressProxyOptions {
  host: string;
  port?: number;
  allow?: readonly string[];
  /** Hosts an admin configured that may resolve to private addresses (a company registry); never loopback, link-local or this host. */
  privateAllowed?: readonly string[];
  /** Name resolution (tests give their own); default the system resolver. */
  resolve?: Resolve;
  /** The one address served from the start; without it none is until `serve` names it. */
  peer?: string;
  logger?: Logger;
}

export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const allow = (options.allow ?? DEFAULT_REGISTRY_HOSTS).map((host) => host.toLowerCase());
  const privateAllowed = new Set((options.privateAllowed ?? []).map((host) => host.toLowerCase()));
  const resolve = options.resolve ?? defaultResolve;
  const refused: string[] = [];
  const sockets = new Set<Socket>();
  const refuse = (client: Socket, target: string, reason: string) => {
    refused.push(target);
    options.logger?.warn({ target, reason }, 'egress proxy refused a connection');
    client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\n\r\ndockhand egress proxy: ${target}: ${reason}\n`);
  };
  const server: Server = createServer((request, response) => {
    refused.push(request.url ?? '');
    response.writeHead(403, { 'content-type': 'text/plain' }).end('dockhand egress proxy: only CONNECT to allowlisted registries\n');
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  server.on('connect', (request, client: Socket, head: Buffer) => {
    const target = request.url ?? '';
    client.on('error', () => client.destroy());
    if (!isAllowedTarget(target, allow)) {
      refuse(client, target, 'not an allowlisted host name on port 443');
      return;
    }
    const [name = '', port = '443'] = target.toLowerCase().split(':');
    void resolve(name).then(
      (addresses) => {
        const verdicts = addresses.map((entry) => ({ address: entry.address, why: forbiddenAddress(entry.address, { privateAllowed: privateAllowed.has(name) }) }));
        const bad = verdicts.find((entry) => entry.why !== undefined);
        const chosen = verdicts[0];
        // One forbidden answer refuses the name: a mixed answer is how rebinding starts.
        if (bad || !chosen) return refuse(client, target, bad ? `resolves to ${bad.address}, ${bad.why}` : 'resolves to no address');
        if (client.destroyed) return;
        const upstream = connect(Number(port), chosen.address, () => {
          client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          if (head.length > 0) upstream.write(head);
          upstream.pipe(client);
          client.pipe(upstream);
        });
        sockets.add(upstream);
        upstream.on('close', () => sockets.delete(upstream));
        upstream.on('error', () => client.destroy());
        client.on('close', () => upstream.destroy());
      },
      (error: unknown) => refuse(client, target, `does not resolve (${error instanceof Error ? error.message : String(error)})`),
    );
  });
  const gate = new PeerGate('egress proxy', options.logger);
  if (options.peer !== undefined) gate.serve(options.peer);
  const listening = await listenForPeer(server, gate, options.host, options.port ?? 0);
  return {
    host: options.host,
    port: listening.port,
    refused,
    serve: (address) => gate.serve(address),
    get foreign() {
      return gate.foreign;
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return listening.close();
    },
  };
}
