import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';

/*
 * Network namespaces for tests that run fleet processes as separate machines would (root only):
 * each namespace has its own loopback and one veth pair to the host, `10.201.<n>.<4k+2>` inside,
 * `…<4k+1>` on the host side. A process in it reaches the host's services (Postgres, the replay
 * model, an API replica) only over that address — nothing through a shared loopback. The host
 * masquerades the namespace's traffic to the outside, as a node's own route out would (toolchain
 * downloads from the npm registry); `cut()` takes the link down (a network partition as the
 * worker sees it: packets vanish, connections hang) and `restore()` brings it back.
 */

export interface Namespace {
  name: string;
  /** The namespace's own address. */
  address: string;
  /** The host's end of the veth pair: what processes inside dial to reach the host. */
  hostAddress: string;
  /** Spawns a process inside the namespace (the command is exec'd: its pid is the child's). */
  spawn(command: string, args: string[], options: { env: NodeJS.ProcessEnv; cwd: string }): ChildProcess;
  cut(): void;
  restore(): void;
  remove(): void;
}

/** The /16 every test namespace's addresses come from (for pg_hba and listen addresses). */
export const NAMESPACE_NETWORK = '10.201.0.0/16';

function run(command: string, ...args: string[]): string {
  return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

/** A rule added to iptables and removed again by `remove` (the exact rule, so nothing else is touched). */
function iptables(action: '-I' | '-D', rule: { table: 'nat' | 'filter'; chain: string; spec: string[] }): void {
  const args = ['-t', rule.table, action, rule.chain, ...(action === '-I' ? ['1'] : []), ...rule.spec];
  try {
    run('iptables', ...args);
  } catch (error) {
    if (action === '-I') throw error;
  }
}

export function namespacesSupported(): boolean {
  try {
    return process.getuid?.() === 0 && run('ip', 'netns', 'list') !== undefined;
  } catch {
    return false;
  }
}

/** `count` namespaces on one fresh 10.201.<n>.0/24 (n picked at random so parallel runs differ). */
export function createNamespaces(count: number): Namespace[] {
  const tag = randomBytes(2).toString('hex');
  const subnet = 10 + (randomBytes(1)[0]! % 240);
  const made: Namespace[] = [];
  try {
    for (let index = 0; index < count; index += 1) made.push(createNamespace(`dh-${tag}-${index}`, `dh${tag}${index}`, `10.201.${subnet}`, index));
  } catch (error) {
    for (const namespace of made) namespace.remove();
    throw error;
  }
  return made;
}

function createNamespace(name: string, link: string, prefix: string, index: number): Namespace {
  const hostAddress = `${prefix}.${index * 4 + 1}`;
  const address = `${prefix}.${index * 4 + 2}`;
  const cidr = `${prefix}.${index * 4}/30`;
  const hostLink = `${link}h`;
  const innerLink = `${link}n`;
  const comment = ['-m', 'comment', '--comment', name];
  const rules = [
    { table: 'nat' as const, chain: 'POSTROUTING', spec: ['-s', cidr, '!', '-d', NAMESPACE_NETWORK, '-j', 'MASQUERADE', ...comment] },
    // Docker's FORWARD policy is DROP: let this namespace's traffic through, both ways.
    { table: 'filter' as const, chain: 'FORWARD', spec: ['-s', cidr, '-j', 'ACCEPT', ...comment] },
    { table: 'filter' as const, chain: 'FORWARD', spec: ['-d', cidr, '-j', 'ACCEPT', ...comment] },
  ];
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    for (const rule of rules) iptables('-D', rule);
    // Deleting the namespace deletes its end of the pair, and with it the host's end.
    try {
      run('ip', 'netns', 'del', name);
    } catch {
      // Never created.
    }
    try {
      run('ip', 'link', 'del', hostLink);
    } catch {
      // Gone with the namespace.
    }
  };
  try {
    run('ip', 'netns', 'add', name);
    run('ip', 'link', 'add', hostLink, 'type', 'veth', 'peer', 'name', innerLink);
    run('ip', 'link', 'set', innerLink, 'netns', name);
    run('ip', 'addr', 'add', `${hostAddress}/30`, 'dev', hostLink);
    run('ip', 'link', 'set', hostLink, 'up');
    const inside = (...args: string[]) => run('ip', 'netns', 'exec', name, ...args);
    inside('ip', 'link', 'set', 'lo', 'up');
    inside('ip', 'addr', 'add', `${address}/30`, 'dev', innerLink);
    inside('ip', 'link', 'set', innerLink, 'up');
    inside('ip', 'route', 'add', 'default', 'via', hostAddress);
    for (const rule of rules) iptables('-I', rule);
  } catch (error) {
    remove();
    throw error;
  }
  return {
    name,
    address,
    hostAddress,
    spawn: (command, args, options) => spawn('ip', ['netns', 'exec', name, command, ...args], { ...options, stdio: ['ignore', 'pipe', 'pipe'] }),
    cut: () => void run('ip', 'link', 'set', hostLink, 'down'),
    restore: () => void run('ip', 'link', 'set', hostLink, 'up'),
    remove,
  };
}
