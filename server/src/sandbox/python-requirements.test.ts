import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { venvCommandsScript } from './python-requirements';

/*
 * Debian's python3-coverage names its command python3-coverage; a CI's `coverage run -m pytest`
 * found none (bench:repos toolz: "coverage: command not found"). The venv gets the bare name.
 */

describe("the venv's commands for Debian's python3-* ones", () => {
  it('makes .venv/bin/<name> run the Debian command with the venv\'s Python, and leaves names that exist alone', { timeout: 60_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'dockhand-venv-commands-'));
    try {
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      writeFileSync(join(bin, 'python3-fakecov'), '#!/usr/bin/python3\nimport sys\nprint("fakecov", sys.prefix, *sys.argv[1:])\n');
      writeFileSync(join(bin, 'python3-taken'), '#!/usr/bin/python3\nprint("debian")\n');
      writeFileSync(join(bin, 'taken'), '#!/bin/sh\necho bare\n');
      for (const name of ['python3-fakecov', 'python3-taken', 'taken']) chmodSync(join(bin, name), 0o755);
      execFileSync('python3', ['-m', 'venv', '--system-site-packages', '.venv'], { cwd: dir });
      const made = spawnSync('bash', ['-c', venvCommandsScript(bin)], { cwd: dir, encoding: 'utf8' });
      expect(made.status).toBe(0);
      expect(execFileSync(join(dir, '.venv/bin/fakecov'), ['run', '-m', 'pytest'], { encoding: 'utf8' }).trim()).toBe(`fakecov ${join(dir, '.venv')} run -m pytest`);
      expect(existsSync(join(dir, '.venv/bin/taken'))).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
