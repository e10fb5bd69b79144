import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorkspaceImage, type WorkspaceImage } from '../../../test/support/workspace-image';
import { DockerSandboxDriver } from './docker-driver';
import { WorkspaceDisks } from './workspace-disk';

/*
 * The sandbox's disk limit under gVisor: /workspace is a 64 MiB loop-mounted ext4 holding the
 * overlay's upper layer over the image's own workspace. A write past it fails inside with ENOSPC
 * and the call says which limit and which setting; `df` shows the limit, not the host's disk; the
 * image's files are all there; destroy leaves no mount and no file behind.
 */

let workspace: WorkspaceImage;
let driver: DockerSandboxDriver;
let dir: string;

beforeAll(async () => {
  workspace = await startWorkspaceImage('disk');
  dir = mkdtempSync(join(tmpdir(), 'dockhand-disks-'));
  driver = new DockerSandboxDriver({ docker: workspace.docker, ownerId: `test-disk-${process.pid}`, runtime: 'runsc', limits: { memoryMiB: 1024, pids: 128 }, disks: new WorkspaceDisks(dir, 64) });
});

afterAll(async () => {
  await driver?.destroyAll();
  await workspace?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('sandbox disk limit (runsc, loop-mounted ext4 under an overlay)', () => {
  it('stops writes at the limit with a clear error; df shows the limit; the image workspace is intact; destroy cleans up', async () => {
    const sandbox = await driver.create({ image: workspace.image, baseSha: workspace.sha });
    const before = await sandbox.exec({ cmd: ['bash', '-c', 'cat README.md; git status --porcelain; df -k /workspace | tail -1'] });
    expect(before.stdout).toMatch(/^hello\n/);
    const size = Number(before.stdout.trim().split('\n').at(-1)?.split(/\s+/)[1]);
    expect(size).toBeGreaterThan(40 * 1024);
    expect(size).toBeLessThanOrEqual(64 * 1024);

    const filled = await sandbox.exec({ cmd: ['bash', '-c', 'dd if=/dev/zero of=big.bin bs=1M count=200'], timeoutMs: 60_000 });
    expect(filled.exitCode).not.toBe(0);
    expect(filled.stderr).toMatch(/No space left on device/);
    expect(filled.stderr).toContain("the sandbox's disk limit is reached: /workspace holds at most 64 MiB (DOCKHAND_SANDBOX_DISK)");
    const written = await sandbox.exec({ cmd: ['bash', '-c', 'wc -c < big.bin'] });
    expect(Number(written.stdout.trim())).toBeLessThanOrEqual(64 * 1024 * 1024);
    await expect(sandbox.writeFile('more.bin', Buffer.alloc(8 * 1024 * 1024))).rejects.toThrow(/DOCKHAND_SANDBOX_DISK/);

    // Room again once the agent removes what it made; the diff still works on the overlay.
    await sandbox.exec({ cmd: ['rm', '-f', 'big.bin', 'more.bin'] });
    await sandbox.writeFile('notes.txt', 'kept\n');
    expect(await sandbox.diff()).toContain('+kept');

    const home = join(dir, (await workspace.docker.getContainer(sandbox.id).inspect()).Name.replace(/^\//, ''));
    expect(existsSync(join(home, 'disk.img'))).toBe(true);
    await sandbox.destroy();
    expect(existsSync(home)).toBe(false);
    expect(readFileSync('/proc/mounts', 'utf8')).not.toContain(dir);
  });

  it('gives each sandbox its own disk: one full workspace leaves another room', async () => {
    const full = await driver.create({ image: workspace.image, baseSha: workspace.sha });
    const other = await driver.create({ image: workspace.image, baseSha: workspace.sha });
    await full.exec({ cmd: ['bash', '-c', 'dd if=/dev/zero of=big.bin bs=1M count=200 2>/dev/null'], timeoutMs: 60_000 });
    const room = await other.exec({ cmd: ['bash', '-c', 'dd if=/dev/zero of=half.bin bs=1M count=32 2>&1 && test -e half.bin'] });
    expect(room.exitCode).toBe(0);
    expect((await other.exec({ cmd: ['bash', '-c', 'test -e big.bin && echo shared || echo separate'] })).stdout).toBe('separate\n');
  });
});
