import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

  /*
   * Census python-dotenv, marshmallow, arrow: the CI's `pytest` was Debian's /usr/bin/pytest
   * (`#!/usr/bin/python3`), which does not see the venv: conftest's `import click` (Debian's
   * python3-click put in the venv by the build) failed, pytest exited 4.
   */
  it("makes .venv/bin/<name> for Debian's #!/usr/bin/python3 commands, run by the venv's Python, so they import what only the venv has", { timeout: 60_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'dockhand-venv-commands-'));
    try {
      const bin = join(dir, 'bin');
      mkdirSync(bin);
      writeFileSync(join(bin, 'fakepytest'), '#!/usr/bin/python3\nimport sys\nimport only_in_venv\nprint("fakepytest", sys.prefix, only_in_venv.WHERE, *sys.argv[1:])\n');
      writeFileSync(join(bin, 'shelltool'), '#!/bin/sh\necho shell\n');
      writeFileSync(join(bin, 'pip'), '#!/usr/bin/python3\nprint("debian pip")\n');
      for (const name of ['fakepytest', 'shelltool', 'pip']) chmodSync(join(bin, name), 0o755);
      execFileSync('python3', ['-m', 'venv', '--system-site-packages', '.venv'], { cwd: dir });
      const sitePackages = execFileSync(join(dir, '.venv/bin/python'), ['-c', 'import site; print(site.getsitepackages()[0])'], { encoding: 'utf8' }).trim();
      writeFileSync(join(sitePackages, 'only_in_venv.py'), 'WHERE = "venv"\n');
      const venvPip = readFileSync(join(dir, '.venv/bin/pip'), 'utf8');
      const made = spawnSync('bash', ['-c', venvCommandsScript(bin)], { cwd: dir, encoding: 'utf8' });
      expect(made.stderr).toBe('');
      expect(made.status).toBe(0);
      const ran = spawnSync('bash', ['-c', 'fakepytest --cov'], { cwd: dir, encoding: 'utf8', env: { ...process.env, PATH: `${join(dir, '.venv/bin')}:${bin}:/usr/bin:/bin` } });
      expect(ran.stderr).toBe('');
      expect(ran.stdout.trim()).toBe(`fakepytest ${join(dir, '.venv')} venv --cov`);
      expect(existsSync(join(dir, '.venv/bin/shelltool'))).toBe(false);
      expect(readFileSync(join(dir, '.venv/bin/pip'), 'utf8')).toBe(venvPip);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
