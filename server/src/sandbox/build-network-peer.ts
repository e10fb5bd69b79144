import type { Server as HttpServer } from 'node:http';
import { createServer, isIP, type Server, type Socket } from 'node:net';
import type { Logger } from 'pino';

/**
 * Each snapshot build's listeners on the build network's gateway (the allowlist proxy, the
 * registry front that adds the repository's secret upstream) serve ONE build container, known by
 * its address on the build network. The host's rule for each port accepts only that address
 * (`build-network.ts` `openBuildPort`); this gate is the same check inside the listener, so a
 * rule left wider by mistake, or a second build on the network, still gets nothing: a connection
 * from any other address — or any connection before the build's address is known — is reset as
 * soon as it is accepted, before a byte of it is read, counted as foreign and logged with its
 * peer. It never reaches the proxy's or the front's handler, the credential, or the build's
 * counts and secret audit.
 *
 * What it relies on: the build container cannot send from another container's address. Builds
 * run with every capability dropped (no NET_RAW or NET_ADMIN to forge a source or take over an
 * address), and a TCP connection needs the answers to reach the sender.
 */

/** An address as a peer check compares it: IPv4-mapped IPv6 (`::ffff:172.18.0.2`) as its IPv4, lower case. */
export function peerAddress(address: string | undefined): string | undefined {
  if (!address) return undefined;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  return (mapped ?? address).toLowerCase();
}

/** Only the peers a gate refused that a log or a test needs to see; the count goes on. */
const FOREIGN_PEERS_KEPT = 20;

export class PeerGate {
  private peer: string | undefined;
  private refusedCount = 0;
  /** The first addresses refused (for the build log and tests). */
  readonly foreignPeers: string[] = [];

  constructor(
    /** What the log calls the listener: `egress proxy`, `registry front`. */
    private readonly listener: string,
    private readonly logger?: Logger,
  ) {}

  /** Serve `address` from now on (the build container's address on the build network). */
  serve(address: string): void {
    const peer = peerAddress(address);
    if (!peer || isIP(peer) === 0) throw new Error(`${this.listener}: ${JSON.stringify(address)} is not an IP address to serve`);
    this.peer = peer;
  }

  /** The address served, if known yet. */
  get serving(): string | undefined {
    return this.peer;
  }

  /** Connections refused: from another address, or before the build's address was known. */
  get foreign(): number {
    return this.refusedCount;
  }

  /** Whether `socket` comes from the address served; counts and logs it when not. */
  admits(socket: Socket): boolean {
    const from = peerAddress(socket.remoteAddress);
    if (this.peer !== undefined && from === this.peer) return true;
    this.refusedCount += 1;
    if (this.foreignPeers.length < FOREIGN_PEERS_KEPT) this.foreignPeers.push(from ?? 'unknown');
    this.logger?.warn({ peer: from ?? 'unknown', serving: this.peer ?? 'nobody yet', listener: this.listener }, `${this.listener}: refused a connection from ${from ?? 'an unknown address'}, which is not the build it serves`);
    return false;
  }
}

/**
 * Listens on `host:port` and hands `server` only the connections `gate` admits. Connections
 * arrive paused, so nothing another peer sent is read before it is reset.
 */
export async function listenForPeer(server: HttpServer, gate: PeerGate, host: string, port: number): Promise<{ port: number; close(): Promise<void> }> {
  const front: Server = createServer({ pauseOnConnect: true }, (socket) => {
    if (!gate.admits(socket)) {
      socket.resetAndDestroy();
      return;
    }
    server.emit('connection', socket);
    socket.resume();
  });
  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen(port, host, () => resolve());
  });
  const address = front.address();
  if (address === null || typeof address === 'string') throw new Error(`${host}: not listening on a TCP port`);
  let closing: Promise<void> | undefined;
  return {
    port: address.port,
    // The caller destroys the connections it was handed (its 'connection' listener tracks them).
    close: () => (closing ??= new Promise<void>((resolve) => front.close(() => resolve()))),
  };
}
