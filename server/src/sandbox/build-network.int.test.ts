import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { networkInterfaces } from 'node:os';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuildNetwork, openBuildPort, type BuildNetwork } from './build-network';
import { ensureBaseImage } from './test-support';

/*
 * Issue #23 item 1, measured on this host: a container under runsc-egress on the build network
 * reaches the one port opened for it on the gateway and nothing else of the host (the gateway's
 * other ports, 172.17.0.1, the host's other addresses). The listeners are this test's own, on
 * 0.0.0.0 (every address of this machine); nothing is sent anywhere else.
 */

const docker = new Docker();
let network: BuildNetwork;
const servers: Server[] = [];
const accepted: string[] = [];
const OPEN_PORT = 41_000 + Math.floor(Math.random() * 4_000);
const CLOSED_PORT = OPEN_PORT + 5_000;

async function listen(port: number): Promise<void> {
  const server = createServer((socket) => {
    accepted.push(`${socket.localAddress ?? '?'}:${port}`);
    socket.end();
  });
  await new Promise<void>((done) => server.listen(port, '0.0.0.0', () => done()));
  servers.push(server);
}

/** Runs in a runsc-egress container on the build network: which of `targets` (address:port) accept a connection. */
function probe(targets: string[]): string[] {
  const script = targets.map((target) => `timeout 5 bash -c 'exec 3<>/dev/tcp/${target.replace(':', '/')}' 2>/dev/null && echo "open ${target}"`).join('; ') + '; true';
  const output = execFileSync('docker', ['run', '--rm', '--runtime', 'runsc-egress', '--network', network.name, 'dockhand/base:latest', 'bash', '-c', script], { encoding: 'utf8', timeout: 120_000 });
  return output.split('\n').filter((line) => line.startsWith('open ')).map((line) => line.slice(5));
}

beforeAll(async () => {
  ensureBaseImage();
  network = await ensureBuildNetwork(docker);
  await listen(OPEN_PORT);
  await listen(CLOSED_PORT);
}, 600_000);

afterAll(() => {
  for (const server of servers) server.close();
});

describe('the build network reaches only the ports opened for a build', () => {
  it('one opened port on the gateway; no other port or address of the host', { timeout: 300_000 }, async () => {
    const own = Object.values(networkInterfaces()).flatMap((entries) => entries ?? []).filter((entry) => entry.family === 'IPv4' && !entry.internal).map((entry) => entry.address);
    const close = await openBuildPort(network, OPEN_PORT);
    let open: string[];
    try {
      open = probe([`${network.gateway}:${OPEN_PORT}`, `${network.gateway}:${CLOSED_PORT}`, ...own.filter((address) => address !== network.gateway).flatMap((address) => [`${address}:${OPEN_PORT}`, `${address}:${CLOSED_PORT}`])]);
    } finally {
      await close();
    }
    expect(open).toEqual([`${network.gateway}:${OPEN_PORT}`]);
    // Closed again once the build's listener is done.
    expect(probe([`${network.gateway}:${OPEN_PORT}`])).toEqual([]);
    expect(accepted.filter((entry) => !entry.endsWith(`:${OPEN_PORT}`) || !entry.includes(network.gateway))).toEqual([]);
  });

  it('a rule left by a server that died is removed when the network is next set up', async () => {
    const rule = ['-p', 'tcp', '-d', network.gateway, '--dport', '1', '-m', 'comment', '--comment', 'dockhand build listener pid 999999', '-j', 'ACCEPT'];
    execFileSync('iptables', ['-w', '5', '-I', 'DOCKHAND-BUILD', '1', ...rule]);
    await ensureBuildNetwork(docker);
    expect(execFileSync('iptables', ['-S', 'DOCKHAND-BUILD'], { encoding: 'utf8' })).not.toContain('pid 999999');
  });
});
