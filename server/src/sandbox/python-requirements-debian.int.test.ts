import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bestEffort } from './python-install';
import { PYTHON_REQUIREMENTS_HELPER, PYTHON_REQUIREMENTS_PROGRAM } from './python-requirements';

/*
 * The build's helper for test requirements pip cannot get (no package index here): one by one,
 * from Debian's python3-* package of that name (apt reaches deb.debian.org, so this is an
 * integration test, not a unit test), the rest named.
 */

describe('test requirements the image cannot give', () => {
  /** A venv in a new directory with the build's helper written where the install names it. */
  function venv(files: Record<string, string>): string {
    const dir = mkdtempSync(join(tmpdir(), 'dockhand-best-effort-'));
    execFileSync('python3', ['-m', 'venv', '--system-site-packages', '.venv'], { cwd: dir });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    mkdirSync(dirname(PYTHON_REQUIREMENTS_HELPER), { recursive: true });
    writeFileSync(PYTHON_REQUIREMENTS_HELPER, PYTHON_REQUIREMENTS_PROGRAM);
    return dir;
  }
  const run = (dir: string, script: string) => spawnSync('bash', ['-c', script], { cwd: dir, encoding: 'utf8', env: { ...process.env, PIP_NO_INDEX: '1', PIP_DISABLE_PIP_VERSION_CHECK: '1' } });

  it('installs those it can one by one, from Debian where pip has none, and names the rest (boltons: pytest>=8; arrow: pytz, simplejson)', () => {
    // inflection: no wheel here, Debian has python3-inflection; the nested file is followed.
    const dir = venv({ 'test-requirements.txt': '# tests\npytest  # the runner\ndockhand-no-such-plugin==9.9\n-r other.txt\n', 'other.txt': 'inflection==0.5.1\n' });
    try {
      const result = run(dir, `.venv/bin/pip install -q -r test-requirements.txt || ${bestEffort(['test-requirements.txt'])}`);
      expect(result.status).toBe(0);
      expect(result.stderr).toContain('dockhand: not every test requirement is available here');
      expect(result.stderr).toContain('dockhand: test requirement not available here (no package index, not in Debian), the tests run without it: dockhand-no-such-plugin==9.9');
      expect(result.stderr).toMatch(/dockhand: inflection==0\.5\.1: not on the package index here, Debian's python3-inflection \S+ installed instead/);
      expect(result.stderr).not.toContain('without it: pytest');
      expect(run(dir, '.venv/bin/python -c "import inflection"').status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);

  it('a required file fails naming what neither pip nor Debian has', () => {
    const dir = venv({ 'requirements.txt': 'dockhand-no-such-package\n' });
    try {
      const result = run(dir, `.venv/bin/python ${PYTHON_REQUIREMENTS_HELPER} --required -r requirements.txt`);
      expect(result.status).toBe(1);
      expect(result.stderr).toContain('ERROR: No matching distribution found for dockhand-no-such-package (nor a Debian package python3-dockhand-no-such-package)');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 300_000);
});
