import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Logger } from 'pino';

/** registry.yarnpkg.com serves the npm registry's packages; yarn's lockfiles and berry's default name it. */
export const DEFAULT_REGISTRY_HOSTS = ['registry.npmjs.org', 'registry.yarnpkg.com', 'pypi.org', 'files.pythonhosted.org', 'deb.debian.org', 'proxy.golang.org'];

/**
 * The only way out of a dependency-install container: an HTTP CONNECT proxy that opens tunnels
 * to port 443 of allowlisted hosts and refuses everything else (other hosts, other ports, plain
 * HTTP requests). It runs in the server process, listening on the gateway IP of the --internal
 * Docker network the install container sits on. It does not look inside TLS; that the tunnel
 * reaches the named host is all it promises.
 */
export interface EgressProxy {
  readonly host: string;
  readonly port: number;
  /** Hosts clients asked for and were refused (for logs and tests). */
  readonly refused: string[];
  close(): Promise<void>;
}

export function isAllowedTarget(target: string, allow: readonly string[]): boolean {
  const match = /^([a-zA-Z0-9.-]+):(\d+)$/.exec(target);
  if (!match) return false;
  const [, host = '', port] = match;
  const name = host.toLowerCase();
  // "*.example.com" (policy.yml's form) allows every subdomain, not the domain itself.
  return port === '443' && allow.some((entry) => entry === name || (entry.startsWith('*.') && name.endsWith(entry.slice(1))));
}

export async function startEgressProxy(options: { host: string; port?: number; allow?: readonly string[]; logger?: Logger }): Promise<EgressProxy> {
  const allow = (options.allow ?? DEFAULT_REGISTRY_HOSTS).map((host) => host.toLowerCase());
  const refused: string[] = [];
  const sockets = new Set<Socket>();
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
    if (!isAllowedTarget(target, allow)) {
      refused.push(target);
      options.logger?.warn({ target }, 'egress proxy refused a connection');
      client.end('HTTP/1.1 403 Forbidden\r\n\r\n');
      return;
    }
    const [host = '', port = '443'] = target.split(':');
    const upstream = connect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host, () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('egress proxy is not listening on a TCP port');
  return {
    host: options.host,
    port: address.port,
    refused,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
