import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, networkInterfaces } from 'node:os';
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkspaceImage, type WorkspaceImage } from '../../../test/support/workspace-image';
import { type DockerSandboxDriver, LABELS } from './docker-driver';
import type { DockerSandbox } from './docker-sandbox';

/*
 * The isolation promises of a task sandbox, checked against the real engine under gVisor. One
 * sandbox is shared by the read-mostly checks; the destructive ones (fork bomb, memory hog, wall
 * clock) get their own.
 */
const marker = `/root/dockhand-host-marker-${process.pid}`;
let workspace: WorkspaceImage;
let docker: Docker;
let driver: DockerSandboxDriver;
let image: string;
let sha: string;
let sandbox: DockerSandbox;

function hostAddress(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const address of list ?? []) if (address.family === 'IPv4' && !address.internal) return address.address;
  }
  return '127.0.0.1';
}

beforeAll(async () => {
  writeFileSync(marker, 'host secret\n');
  process.env.DOCKHAND_TEST_SERVER_SECRET = 'must-not-leak';
  workspace = await startWorkspaceImage('driver');
  ({ docker, driver, image, sha } = workspace);
  sandbox = await driver.create({ image, baseSha: sha, labels: { [LABELS.task]: 'isolation' } });
});

afterAll(async () => {
  await workspace?.close();
  rmSync(marker, { force: true });
});

describe('DockerSandboxDriver isolation (runsc)', () => {
  it('runs as uid 1000 with no capabilities, a root it cannot write and an allowlisted environment', async () => {
    const result = await sandbox.exec({ cmd: ['sh', '-c', 'id -u; grep CapEff /proc/self/status; touch /etc/x 2>&1 || echo ro; env'] });
    expect(result.stdout).toMatch(/^1000\n/);
    expect(result.stdout).toMatch(/CapEff:\s+0+\n/);
    expect(result.stdout).toContain('ro\n');
    expect(result.stdout).toContain('CI=true');
    expect(result.stdout).not.toContain('must-not-leak');
    expect(result.stdout).not.toContain('DOCKHAND_TEST_SERVER_SECRET');
  });

  it('runs programs written to /tmp and $HOME (yarn berry runs a script\'s binaries from a temporary folder)', async () => {
    // Docker's tmpfs is noexec unless told otherwise: census arcanis/typanion's `mocha` through
    // `yarn exec` answered "permission denied: mocha" (exit 128) and no test ran.
    const script = 'for dir in /tmp /var/tmp "$HOME"; do printf "#!/bin/sh\\necho ran in %s\\n" "$dir" > "$dir/probe" && chmod +x "$dir/probe" && "$dir/probe"; done';
    const result = await sandbox.exec({ cmd: ['bash', '-c', script] });
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe('ran in /tmp\nran in /var/tmp\nran in /home/dockhand\n');
  });

  it('has no route out: outside addresses and the host are unreachable', async () => {
    const targets = ['1.1.1.1/443', `${hostAddress()}/22`, '172.17.0.1/2375', '127.0.0.1/8737'];
    const script = targets.map((target) => `timeout 5 bash -c 'echo > /dev/tcp/${target}' 2>/dev/null && echo "OPEN ${target}" || echo "closed ${target}"`).join('; ');
    const result = await sandbox.exec({ cmd: ['bash', '-c', script], timeoutMs: 30_000 });
    expect(result.stdout).not.toContain('OPEN');
    expect(result.stdout.match(/closed/g)).toHaveLength(targets.length);
  });

  it('does not see host files', async () => {
    expect(existsSync(marker)).toBe(true);
    const result = await sandbox.exec({ cmd: ['sh', '-c', `cat ${marker} 2>&1; cat /etc/hostname`] });
    expect(result.stdout).not.toContain('host secret');
    expect(result.stdout).not.toContain(readFileSync('/etc/hostname', 'utf8').trim() || hostname());
  });

  it('kills an endless command at its timeout with its whole process tree', async () => {
    const result = await sandbox.exec({ cmd: ['bash', '-c', 'sleep 1000 & (sleep 1001 &); sleep 1002'], timeoutMs: 1500 });
    expect(result.timedOut).toBe(true);
    expect(result.exitCode).toBe(124);
    expect(result.durationMs).toBeLessThan(6000);
    const ps = await sandbox.exec({ cmd: ['ps', '-eo', 'args'] });
    expect(ps.stdout).not.toMatch(/sleep 100[012]/);
  });

  it('streams output, caps it keeping head and tail, and passes stdin', async () => {
    const chunks: string[] = [];
    const result = await sandbox.exec({
      cmd: ['sh', '-c', 'cat; seq 1 20000'],
      stdin: 'from-stdin\n',
      outputCapBytes: 1000,
      onOutput: (chunk) => chunks.push(chunk),
    });
    expect(result.exitCode).toBe(0);
    expect(result.truncated).toBe(true);
    expect(result.stdout.startsWith('from-stdin\n1\n2\n')).toBe(true);
    expect(result.stdout.endsWith('19999\n20000\n')).toBe(true);
    expect(result.stdout).toMatch(/\[\.\.\. \d+ bytes of output cut \.\.\.\]/);
    expect(chunks.join('').length).toBeGreaterThan(100_000);
  });

  it('reads and writes files binary-safe and refuses paths that escape the workspace', async () => {
    const bytes = Buffer.from([0, 1, 2, 200, 255, 10, 13]);
    await sandbox.writeFile('data/blob.bin', bytes);
    expect(Buffer.compare(await sandbox.readFile('data/blob.bin'), bytes)).toBe(0);
    expect((await sandbox.listFiles('data')).map((entry) => entry.path)).toEqual(['data/blob.bin']);
    await sandbox.exec({ cmd: ['ln', '-sfn', '/etc', 'etc-link'] });
    await expect(sandbox.readFile('../etc/passwd')).rejects.toThrow(/leaves the workspace/);
    await expect(sandbox.readFile('data/../../etc/passwd')).rejects.toThrow(/leaves the workspace/);
    await expect(sandbox.readFile('/etc/passwd')).rejects.toThrow(/absolute/);
    await expect(sandbox.readFile('etc-link/passwd')).rejects.toThrow(/outside the workspace/);
    await expect(sandbox.writeFile('etc-link/evil', 'x')).rejects.toThrow(/outside the workspace/);
    await expect(sandbox.listFiles('etc-link')).rejects.toThrow(/outside the workspace/);
    await expect(sandbox.readFile('missing.txt')).rejects.toThrow(/does not exist/);
  });

  it('diffs tracked and untracked changes against the base commit, ignoring ignored files', async () => {
    await sandbox.writeFile('README.md', 'hello\nworld\n');
    await sandbox.writeFile('node_modules/dep/index.js', 'ignored\n');
    const diff = await sandbox.diff();
    expect(diff).toContain('+world');
    expect(diff).toContain('diff --git a/data/blob.bin b/data/blob.bin');
    expect(diff).not.toContain('node_modules');
    // The sandbox's own index is untouched by diff().
    const status = await sandbox.exec({ cmd: ['git', 'diff', '--cached', '--name-only'] });
    expect(status.stdout).toBe('');
  });

  it('stops a fork bomb at the process limit; the sandbox and host keep working', async () => {
    const bomb = await driver.create({ image, baseSha: sha, limits: { pids: 64 } });
    const result = await bomb.exec({ cmd: ['bash', '-c', 'bomb() { bomb | bomb & }; bomb; sleep 3'], timeoutMs: 6000 });
    expect(result.stderr).toMatch(/fork: .*Resource temporarily unavailable/);
    // The bomb's background processes did not outlive the command.
    // Killed processes can take a moment to be reaped under load; until then a new process may be
    // refused ("try again"). The sandbox must accept commands again within seconds.
    let after = await bomb.exec({ cmd: ['sh', '-c', 'echo still here; ps -eo args'] });
    for (let attempt = 0; attempt < 20 && !after.stdout.startsWith('still here\n'); attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      after = await bomb.exec({ cmd: ['sh', '-c', 'echo still here; ps -eo args'] });
    }
    expect(after.stdout).toMatch(/^still here\n/);
    expect(after.stdout).not.toContain('bomb');
    await bomb.destroy();
    expect((await docker.info()).ServerVersion).toBeTruthy();
    expect((await sandbox.exec({ cmd: ['true'] })).exitCode).toBe(0);
  });

  it('bounds memory with the cgroup: a hog run by exec (before the channel is up) kills its sandbox, not the host', async () => {
    // No address-space cap any more (it broke V8's WebAssembly); the channel's memory guard stops
    // hogs (channel.int.test.ts). The exec path has no guard: the cgroup limit is what holds.
    const hog = await driver.create({ image, baseSha: sha, limits: { memoryMiB: 512 } });
    const result = await hog
      .exec({ cmd: ['python3', '-c', 'a = []\nwhile True: a.append(bytearray(16 << 20))'], timeoutMs: 60_000 })
      .catch((error: unknown) => ({ exitCode: -2, stderr: String(error), timedOut: false }));
    expect(result.exitCode).not.toBe(0);
    expect(result.timedOut).toBe(false);
    const state = (await docker.getContainer(hog.id).inspect()).State;
    if (state.Running) {
      // Seen on a loaded machine: the hog alone died (the sandbox kernel refused it memory) and the sandbox lives on.
      expect((await hog.exec({ cmd: ['echo', 'survived'] })).stdout, JSON.stringify(result)).toBe('survived\n');
    } else {
      expect(state.OOMKilled).toBe(true);
      // The call fails saying the sandbox was lost, and why; nothing tells the agent to start another.
      expect(result.stderr).toMatch(/The sandbox was lost: its container was killed at its memory limit/);
      expect(result.stderr).not.toMatch(/start a new one/);
    }
    await hog.destroy();
    expect((await docker.info()).ServerVersion).toBeTruthy();
    expect((await sandbox.exec({ cmd: ['echo', 'others live'] })).stdout).toBe('others live\n');
  });

  it('notices a container that dies under a running command: the call fails at once naming it, later calls too', async () => {
    const doomed = await driver.create({ image, baseSha: sha });
    const losses: string[] = [];
    doomed.onLost((loss) => losses.push(loss.reason));
    const running = doomed.exec({ cmd: ['bash', '-c', 'sleep 120'], timeoutMs: 150_000 }).then(() => 'returned', (error: unknown) => String(error));
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const killed = Date.now();
    await docker.getContainer(doomed.id).kill();
    const outcome = await running;
    expect(Date.now() - killed).toBeLessThan(10_000);
    expect(outcome).toMatch(/The sandbox was lost: its container exited \(code \d+\)\. It was running: sleep 120\./);
    expect(losses).toHaveLength(1);
    expect(doomed.lost?.running).toEqual(['sleep 120']);
    const later = Date.now();
    await expect(doomed.exec({ cmd: ['true'] })).rejects.toThrow(/The sandbox was lost/);
    await expect(doomed.diff()).rejects.toThrow(/The sandbox was lost/);
    expect(Date.now() - later).toBeLessThan(500);
    await doomed.destroy();
  });

  it('destroys a sandbox at its wall-clock limit', async () => {
    const short = await driver.create({ image, baseSha: sha, limits: { wallClockSeconds: 2 } });
    await new Promise((resolve) => setTimeout(resolve, 3500));
    expect(short.isDestroyed).toBe(true);
    await expect(docker.getContainer(short.id).inspect()).rejects.toThrow(/no such container/i);
  });
});
