import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { containerAddress, ensureBuildNetwork, openBuildPort, type BuildNetwork } from './build-network';
import { DependencyCache } from './dep-cache';
import { startEgressProxy } from './egress-proxy';
import { ensureBaseImage } from './test-support';

/*
 * Issues #23 item 1 and #31 item 1, measured on this host: a container under runsc-egress on the
 * build network reaches the ports opened for IT on the gateway and nothing else of the host (the
 * gateway's other ports, 172.17.0.1, the host's other addresses), and not the ports opened for
 * another build running at the same time. The listeners are this test's own, on the gateway or
 * 0.0.0.0 (every address of this machine); nothing is sent anywhere else.
 */

const docker = new Docker();
let network: BuildNetwork;
const servers: Server[] = [];
const accepted: Array<{ local: string; remote: string }> = [];
const containers: string[] = [];
const OPEN_PORT = 41_000 + Math.floor(Math.random() * 4_000);
const CLOSED_PORT = OPEN_PORT + 5_000;

async function listen(port: number): Promise<void> {
  const server = createServer((socket) => {
    accepted.push({ local: `${socket.localAddress ?? '?'}:${port}`, remote: socket.remoteAddress ?? '?' });
    socket.end();
  });
  await new Promise<void>((done) => server.listen(port, '0.0.0.0', () => done()));
  servers.push(server);
}

/** A build-like container (runsc-egress, the build network, no capabilities) idling; its id and address. */
async function startContainer(): Promise<{ id: string; address: string }> {
  const id = execFileSync('docker', ['run', '-d', '--rm', '--runtime', 'runsc-egress', '--network', network.name, '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', 'dockhand/base:latest', 'sleep', 'infinity'], { encoding: 'utf8', timeout: 120_000 }).trim();
  containers.push(id);
  return { id, address: await containerAddress(docker.getContainer(id), network.name) };
}

/** Runs in `container`: which of `targets` (address:port) accept a connection. */
function probe(container: string, targets: string[]): string[] {
  const script = targets.map((target) => `timeout 5 bash -c 'exec 3<>/dev/tcp/${target.replace(':', '/')}' 2>/dev/null && echo "open ${target}"`).join('; ') + '; true';
  const output = execFileSync('docker', ['exec', container, 'bash', '-c', script], { encoding: 'utf8', timeout: 120_000 });
  return output.split('\n').filter((line) => line.startsWith('open ')).map((line) => line.slice(5));
}

/**
 * Runs in `container`: the status line a `POST /` to each gateway port gets, or why none came
 * (Python tells a reset from a refusal and a timeout). Asynchronous: the listeners answering are
 * in this process.
 */
async function statusLines(container: string, ports: number[]): Promise<Record<number, string>> {
  const program = [
    'import socket, sys',
    'for port in sys.argv[2:]:',
    '    try:',
    '        s = socket.create_connection((sys.argv[1], int(port)), timeout=8)',
    "        s.sendall(b'POST / HTTP/1.0\\r\\nHost: x\\r\\n\\r\\n')",
    "        data = b''",
    "        while b'\\n' not in data:",
    '            chunk = s.recv(4096)',
    '            if not chunk: break',
    '            data += chunk',
    "        print(port, data.split(b'\\n')[0].decode('latin1').strip() or 'closed')",
    '    except OSError as error:',
    "        print(port, 'refused', type(error).__name__)",
  ].join('\n');
  const { stdout: output } = await promisify(execFile)('docker', ['exec', container, 'python3', '-c', program, network.gateway, ...ports.map(String)], { encoding: 'utf8', timeout: 120_000 });
  return Object.fromEntries(output.trim().split('\n').map((line) => [Number(line.split(' ')[0]), line.slice(line.indexOf(' ') + 1)]));
}

beforeAll(async () => {
  ensureBaseImage();
  network = await ensureBuildNetwork(docker);
  await listen(OPEN_PORT);
  await listen(CLOSED_PORT);
}, 600_000);

afterAll(() => {
  for (const server of servers) server.close();
  if (containers.length > 0) execFileSync('docker', ['rm', '-f', ...containers], { stdio: 'ignore' });
});

describe('the build network reaches only the ports opened for a build', () => {
  it('one port opened for the container on the gateway; no other port or address of the host; the host sees the container\'s own address', { timeout: 300_000 }, async () => {
    const own = Object.values(networkInterfaces()).flatMap((entries) => entries ?? []).filter((entry) => entry.family === 'IPv4' && !entry.internal).map((entry) => entry.address);
    const build = await startContainer();
    const close = await openBuildPort(network, OPEN_PORT, build.address);
    let open: string[];
    try {
      open = probe(build.id, [`${network.gateway}:${OPEN_PORT}`, `${network.gateway}:${CLOSED_PORT}`, ...own.filter((address) => address !== network.gateway).flatMap((address) => [`${address}:${OPEN_PORT}`, `${address}:${CLOSED_PORT}`])]);
    } finally {
      await close();
    }
    expect(open).toEqual([`${network.gateway}:${OPEN_PORT}`]);
    // Measured, not assumed: runsc-egress connects from the address docker inspect gives the container.
    const seen = accepted.filter((entry) => entry.local.endsWith(`:${OPEN_PORT}`)).map((entry) => entry.remote.replace(/^::ffff:/, ''));
    console.log(JSON.stringify({ build_container_address: build.address, seen_by_host: seen }));
    expect(seen).toEqual([build.address]);
    // Closed again once the build's listener is done.
    expect(probe(build.id, [`${network.gateway}:${OPEN_PORT}`])).toEqual([]);
    expect(accepted.filter((entry) => !entry.local.endsWith(`:${OPEN_PORT}`) || !entry.local.includes(network.gateway))).toEqual([]);
  });

  it('two builds at once: each reaches its own proxy and registry front, and gets a reset from the other\'s', { timeout: 300_000 }, async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'dockhand-two-builds-'));
    const cache = new DependencyCache({ dir: join(scratch, 'cache') });
    const closers: Array<() => Promise<void>> = [];
    try {
      const builds = await Promise.all([startContainer(), startContainer()]);
      const [a, b] = builds.map((build) => ({ ...build, ports: [] as number[], foreign: [] as Array<() => number> }));
      if (!a || !b) throw new Error('two containers expected');
      // As snapshots.ts does: listeners first (refusing everyone), then served and opened to the container's address alone.
      for (const build of [a, b]) {
        const proxy = await startEgressProxy({ host: network.gateway, allow: ['registry.npmjs.org'] });
        const front = await cache.listen(network.gateway);
        closers.push(() => proxy.close(), () => front.close());
        for (const listener of [proxy, front]) listener.serve(build.address);
        build.ports.push(proxy.port, Number(new URL(front.url).port));
        build.foreign.push(() => proxy.foreign, () => front.foreign);
        for (const port of build.ports) closers.push(await openBuildPort(network, port, build.address));
      }
      const [proxyA, frontA] = a.ports;
      const [proxyB, frontB] = b.ports;
      if (!proxyA || !frontA || !proxyB || !frontB) throw new Error('ports expected');
      const fromA = await statusLines(a.id, [proxyA, frontA, proxyB, frontB]);
      const fromB = await statusLines(b.id, [proxyA, frontA, proxyB, frontB]);
      console.log(JSON.stringify({ a: a.address, b: b.address, ports: [proxyA, frontA, proxyB, frontB], fromA, fromB, foreign: [...a.foreign, ...b.foreign].map((count) => count()) }));
      // Each its own: the proxy refuses a plain request (403), the front a POST (405).
      expect(fromA[proxyA]).toMatch(/^HTTP\/1\.1 403/);
      expect(fromA[frontA]).toMatch(/^HTTP\/1\.1 405/);
      expect(fromB[proxyB]).toMatch(/^HTTP\/1\.1 403/);
      expect(fromB[frontB]).toMatch(/^HTTP\/1\.1 405/);
      // The other's: reset by the host's rule, before any listener sees it.
      for (const answer of [fromA[proxyB], fromA[frontB], fromB[proxyA], fromB[frontA]]) expect(answer).toMatch(/^refused (ConnectionRefusedError|ConnectionResetError)$/);
      expect([...a.foreign, ...b.foreign].map((count) => count())).toEqual([0, 0, 0, 0]);
    } finally {
      for (const close of closers) await close();
      await cache.close();
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('a rule left by a server that died is removed when the network is next set up (the source-specific form too)', async () => {
    const rule = ['-s', '172.31.254.254', '-p', 'tcp', '-d', network.gateway, '--dport', '1', '-m', 'comment', '--comment', 'dockhand build listener pid 999999', '-j', 'ACCEPT'];
    const old = ['-p', 'tcp', '-d', network.gateway, '--dport', '2', '-m', 'comment', '--comment', 'dockhand build listener pid 999998', '-j', 'ACCEPT'];
    execFileSync('iptables', ['-w', '5', '-I', 'DOCKHAND-BUILD', '1', ...rule]);
    execFileSync('iptables', ['-w', '5', '-I', 'DOCKHAND-BUILD', '1', ...old]);
    await ensureBuildNetwork(docker);
    const rules = execFileSync('iptables', ['-S', 'DOCKHAND-BUILD'], { encoding: 'utf8' });
    expect(rules).not.toContain('pid 999999');
    expect(rules).not.toContain('pid 999998');
  });
});
