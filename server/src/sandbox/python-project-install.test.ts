import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectInstall } from './python-install';

/*
 * Census marshmallow: tox.ini's `extras = tests` made the build run `pip install -e '.[tests]'`;
 * simplejson (one of the extra's requirements) is on no index here, so pip installed nothing, the
 * source tree was used and simplejson never came: conftest's `import simplejson` failed (exit 4).
 * A real venv and pip with no index: the extra's requirements are listed for the one-by-one
 * install (which takes Debian's package where pip has none), then the project without them.
 */

describe("the project's install with its extras", () => {
  it('lists the extras\' requirements (not the project itself) and installs the project without them when pip refuses the extra, else its source tree', { timeout: 120_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'dockhand-project-install-'));
    try {
      writeFileSync(join(dir, 'pyproject.toml'), [
        '[build-system]', 'requires = ["flit_core"]', 'build-backend = "flit_core.buildapi"', '',
        '[project]', 'name = "fixture_lib"', 'version = "1.0.0"', 'description = "A fixture"', '',
        '[project.optional-dependencies]', 'tests = ["pytest", "no-such-dist-dockhand>=1; python_version >= \'3\'", "Fixture.Lib[docs]"]', 'docs = ["sphinx"]', '',
      ].join('\n'));
      mkdirSync(join(dir, 'fixture_lib'));
      writeFileSync(join(dir, 'fixture_lib', '__init__.py'), 'WHERE = "installed"\n');
      execFileSync('python3', ['-m', 'venv', '--system-site-packages', '.venv'], { cwd: dir });
      const ran = spawnSync('bash', ['-c', projectInstall(['tests'])], { cwd: dir, encoding: 'utf8', env: { ...process.env, PIP_NO_INDEX: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1' } });
      expect(ran.status, ran.stderr).toBe(0);
      expect(readFileSync(join(dir, '.venv/dockhand-extras.txt'), 'utf8').trim().split('\n')).toEqual(['pytest', "no-such-dist-dockhand>=1; python_version >= '3'"]);
      const imported = execFileSync(join(dir, '.venv/bin/python'), ['-c', 'import fixture_lib, sys; print(fixture_lib.WHERE, fixture_lib.__file__.startswith(sys.argv[1]))', dir], { cwd: tmpdir(), encoding: 'utf8' }).trim();
      // Installed, or (where this machine's backends cannot build it) its source tree on the venv's path.
      expect(imported).toBe('installed True');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
