/**
 * Whether a process of this host with `pid` still runs: what a leftover named by its maker's host
 * and pid (a sandbox container's owner labels, a push's scratch directory) is judged by.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive but not ours to signal.
    return typeof error === 'object' && error !== null && 'code' in error && error.code === 'EPERM';
  }
}
