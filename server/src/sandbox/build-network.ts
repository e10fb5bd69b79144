import { execFile } from 'node:child_process';
import { isIP } from 'node:net';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import { z } from 'zod';
import { DockhandError } from '../errors';
import { processAlive } from '../process-alive';
import { LABELS } from './docker-driver';
import { isNotFound } from './docker-sandbox';

const run = promisify(execFile);

/**
 * The network snapshot builds run in (runtime `runsc-egress`: gVisor on the container's own
 * network namespace). Docker's `--internal` keeps it from routing anywhere, but not from the host
 * itself: every address of the host (the network's gateway, other bridges' gateways such as
 * 172.17.0.1, the host's LAN address) answers on it, so a postinstall could reach any service
 * the host listens on. Measured here (Docker 20.10, runsc-egress): without the rules below a
 * build connected to listeners on 172.17.0.1, the gateway and the host's eth0 address.
 *
 * So the host's INPUT chain sends everything arriving from the bridge to one chain of ours,
 * which accepts only the ports the server opens for a build (the allowlist proxy, the dependency
 * cache) on the gateway, each from that build's container address alone, and rejects the rest.
 * Several builds share the network: without the source in the rule, one build reached another's
 * registry front, which adds that repository's secret upstream (issue 31). The bridge has
 * inter-container traffic off, so two builds do not reach each other directly either. The rules
 * need CAP_NET_ADMIN (the server runs as root on a sandbox host); without it a build with
 * egress does not start.
 *
 * Measured here (Docker 20.10, runsc-egress: gVisor's hostinet in the container's network
 * namespace): the host sees a build's connections from the address `docker inspect` gives the
 * container on this network (build-network.int.test.ts checks it on every run).
 */
export const BUILD_NETWORK = 'dockhand-build';
/** Linux interface names are at most 15 characters. */
export const BUILD_BRIDGE = 'dockhand-build0';
const CHAIN = 'DOCKHAND-BUILD';

export interface BuildNetwork {
  name: string;
  gateway: string;
}

async function iptables(args: string[]): Promise<void> {
  // -w: wait for the xtables lock (Docker and other servers on the host take it too).
  await run('iptables', ['-w', '5', ...args], { timeout: 30_000 });
}

async function present(args: string[]): Promise<boolean> {
  return iptables(['-C', ...args]).then(
    () => true,
    () => false,
  );
}

async function ensure(position: 'first' | 'last', chain: string, rule: string[]): Promise<void> {
  if (await present([chain, ...rule])) return;
  await iptables(position === 'first' ? ['-I', chain, '1', ...rule] : ['-A', chain, ...rule]);
}

function isolationFailed(error: unknown): DockhandError {
  const detail = error instanceof Error ? error.message.split('\n').slice(0, 3).join(' ') : String(error);
  return new DockhandError('sandbox_unavailable', `cannot isolate the snapshot build network ${BUILD_NETWORK} from the host: iptables failed (${detail})`, {
    hint: 'run the server as root (or with CAP_NET_ADMIN) on a host with iptables; builds with egress do not start without these rules',
  });
}

/** Creates the chain and the rules every build relies on (idempotent; several servers on one host share them). */
async function isolate(): Promise<void> {
  try {
    await iptables(['-N', CHAIN]).catch(async (error: unknown) => {
      // "Chain already exists" is the usual answer; anything else shows at the next step.
      if (!(await iptables(['-S', CHAIN]).then(() => true, () => false))) throw error;
    });
    await ensure('first', 'INPUT', ['-i', BUILD_BRIDGE, '-j', CHAIN]);
    await ensure('last', CHAIN, ['-p', 'tcp', '-j', 'REJECT', '--reject-with', 'tcp-reset']);
    await ensure('last', CHAIN, ['-j', 'DROP']);
    await ensure('first', CHAIN, ['-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'ACCEPT']);
    await sweepDeadListeners();
  } catch (error) {
    throw isolationFailed(error);
  }
}

/**
 * A server killed during a build leaves its port open on the gateway, where a later listener of
 * anything else could get the same port: rules whose process is gone are removed.
 */
async function sweepDeadListeners(): Promise<void> {
  const { stdout } = await run('iptables', ['-w', '5', '-S', CHAIN], { timeout: 30_000 });
  for (const line of stdout.split('\n')) {
    const match = /^-A \S+ (.*) -m comment --comment "?dockhand build listener pid (\d+)"? -j ACCEPT$/.exec(line.trim());
    if (!match || processAlive(Number(match[2]))) continue;
    await iptables(['-D', CHAIN, ...(match[1] ?? '').split(' '), '-m', 'comment', '--comment', `dockhand build listener pid ${match[2]}`, '-j', 'ACCEPT']).catch(() => undefined);
  }
}

function listenerRule(gateway: string, port: number, source: string): string[] {
  return ['-s', source, '-p', 'tcp', '-d', gateway, '--dport', String(port), '-m', 'comment', '--comment', `dockhand build listener pid ${process.pid}`, '-j', 'ACCEPT'];
}

/**
 * Lets one build container (`source`, its address on the build network) reach one port on the
 * gateway until the returned function is called; every other address on the network stays
 * refused there. Call the closer before the container is removed: a later container may be given
 * the same address.
 */
export async function openBuildPort(network: BuildNetwork, port: number, source: string): Promise<() => Promise<void>> {
  if (isIP(source) !== 4) throw new DockhandError('internal', `openBuildPort: the build container's address ${JSON.stringify(source)} is not an IPv4 address`);
  const rule = listenerRule(network.gateway, port, source);
  try {
    await iptables(['-I', CHAIN, '1', ...rule]);
  } catch (error) {
    throw isolationFailed(error);
  }
  let closed = false;
  return async () => {
    if (closed) return;
    closed = true;
    await iptables(['-D', CHAIN, ...rule]).catch(() => undefined);
  };
}

const NetworkInfo = z.object({
  IPAM: z.object({ Config: z.array(z.object({ Gateway: z.string().optional() })).nullish() }),
  Options: z.record(z.string(), z.string()).nullish(),
});

/** The build network, created on first use, with the host's rules in place; returns its gateway (where the proxy listens). */
export async function ensureBuildNetwork(docker: Docker): Promise<BuildNetwork> {
  const read = async (): Promise<string | undefined> => {
    try {
      const info = NetworkInfo.parse(await docker.getNetwork(BUILD_NETWORK).inspect());
      if (info.Options?.['com.docker.network.bridge.name'] !== BUILD_BRIDGE) {
        throw new DockhandError('sandbox_unavailable', `docker network ${BUILD_NETWORK} exists but is not on bridge ${BUILD_BRIDGE}, so its firewall rules would not apply`, {
          hint: `remove it (docker network rm ${BUILD_NETWORK}); the server creates it again`,
        });
      }
      return info.IPAM.Config?.[0]?.Gateway;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  await isolate();
  const existing = await read();
  if (existing) return { name: BUILD_NETWORK, gateway: existing };
  await docker
    .createNetwork({
      Name: BUILD_NETWORK,
      Internal: true,
      CheckDuplicate: true,
      Labels: { [LABELS.sandbox]: 'network' },
      Options: { 'com.docker.network.bridge.name': BUILD_BRIDGE, 'com.docker.network.bridge.enable_icc': 'false' },
    })
    .catch((error: unknown) => {
      // Another build created it first.
      if (!(typeof error === 'object' && error !== null && 'statusCode' in error && error.statusCode === 409)) throw error;
    });
  const gateway = await read();
  if (!gateway) throw new DockhandError('sandbox_unavailable', `docker network ${BUILD_NETWORK} has no gateway address`);
  return { name: BUILD_NETWORK, gateway };
}

const ContainerNetworks = z.object({
  NetworkSettings: z.object({ Networks: z.record(z.string(), z.object({ IPAddress: z.string().optional() })).nullish() }),
});

/**
 * A running container's IPv4 address on `network` (what the host sees its connections come
 * from), read before anything of the repository runs in it: its listeners are opened to it alone.
 */
export async function containerAddress(container: Docker.Container, network: string): Promise<string> {
  const info = ContainerNetworks.parse(await container.inspect());
  const address = info.NetworkSettings.Networks?.[network]?.IPAddress ?? '';
  if (isIP(address) !== 4) {
    throw new DockhandError('sandbox_unavailable', `the build container ${container.id.slice(0, 12)} has no IPv4 address on docker network ${network} (found ${JSON.stringify(address)}), so its proxy and registry front cannot be opened to it alone`, {
      hint: `check the network with docker network inspect ${network}; the server creates it as an IPv4 bridge`,
    });
  }
  return address;
}
