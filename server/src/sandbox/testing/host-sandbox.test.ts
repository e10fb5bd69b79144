import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { createFixtureRepo } from '../../../../test/support/fixture-repo';
import { temporaryDir } from '../../../../test/support/temporary-dirs';
import { HostSandbox } from './host-sandbox';

let sandbox: HostSandbox;

beforeEach(() => {
  const repo = createFixtureRepo('buggy-calc');
  sandbox = new HostSandbox(repo.path, repo.sha);
});

describe('HostSandbox (the host-directory test double)', () => {
  it('runs commands with an allowlisted environment, extra PATH entries first, and a HOME of its own', async () => {
    process.env.DOCKHAND_TEST_HOST_SECRET = 'must-not-leak';
    const bin = temporaryDir('dockhand-bin-');
    writeFileSync(join(bin, 'hello-tool'), '#!/bin/sh\necho tool ran\n', { mode: 0o755 });
    const withBin = new HostSandbox(sandbox.root, sandbox.baseSha, [bin]);
    const result = await withBin.exec({ cmd: ['sh', '-c', 'hello-tool; env; test -d "$HOME" && echo "home=$HOME"'], env: { EXTRA: 'yes' } });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toMatch(/^tool ran\n/);
    expect(result.stdout).toContain('EXTRA=yes');
    expect(result.stdout).toContain('CI=true');
    expect(result.stdout).not.toContain('must-not-leak');
    const home = /^home=(.+)$/m.exec(result.stdout)?.[1];
    expect(home).toBeDefined();
    expect(home).not.toBe(process.env.HOME);
    expect(home?.startsWith(sandbox.root)).toBe(false);
    delete process.env.DOCKHAND_TEST_HOST_SECRET;
  });

  it('caps output in bytes keeping head and tail, with the real sandbox note', async () => {
    const result = await sandbox.exec({ cmd: ['sh', '-c', 'cat; seq 1 20000'], stdin: 'from-stdin\n', outputCapBytes: 1000 });
    expect(result.truncated).toBe(true);
    expect(result.stdout.startsWith('from-stdin\n1\n2\n')).toBe(true);
    expect(result.stdout.endsWith('19999\n20000\n')).toBe(true);
    expect(result.stdout).toMatch(/\n\[\.\.\. \d+ bytes of output cut \.\.\.\]\n/);
  });

  it('reports a command that cannot start as exit 127 and kills a command at its deadline', async () => {
    const missing = await sandbox.exec({ cmd: ['no-such-command-here'] });
    expect(missing.exitCode).toBe(127);
    expect(missing.stderr).toContain('no-such-command-here');
    const slow = await sandbox.exec({ cmd: ['sh', '-c', 'sleep 30 & sleep 31'], timeoutMs: 300 });
    expect(slow.timedOut).toBe(true);
    expect(slow.exitCode).not.toBe(0);
  });

  it('refuses absolute paths, escapes and symlinks out of the workspace', async () => {
    symlinkSync('/etc', join(sandbox.root, 'etc-link'));
    await expect(sandbox.readFile('/etc/passwd')).rejects.toThrow(/absolute/);
    await expect(sandbox.readFile('../outside')).rejects.toThrow(/escapes the workspace/);
    await expect(sandbox.readFile('etc-link/passwd')).rejects.toThrow(/outside the workspace/);
    await expect(sandbox.exec({ cmd: ['true'], cwd: '..' })).rejects.toThrow(/escapes the workspace/);
  });

  it('lists one level sorted without .git and node_modules, and diffs tracked and untracked changes', async () => {
    mkdirSync(join(sandbox.root, 'node_modules/dep'), { recursive: true });
    await sandbox.writeFile('notes/new.txt', 'new file\n');
    const listed = (await sandbox.listFiles()).map((entry) => entry.path);
    expect(listed).toContain('notes');
    expect(listed).not.toContain('.git');
    expect(listed).not.toContain('node_modules');
    expect(listed).toEqual([...listed].sort((a, b) => a.localeCompare(b)));
    expect(await sandbox.listFiles('notes')).toEqual([{ path: 'notes/new.txt', type: 'file', size: 9 }]);
    const diff = await sandbox.diff();
    expect(diff).toContain('diff --git a/notes/new.txt b/notes/new.txt');
    expect(diff).toContain('+new file');
  });
});
