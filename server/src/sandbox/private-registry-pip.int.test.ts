import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pythonSecretForms, testPythonIndex, type TestPythonIndex } from './pip-index.test-support';
import { registryHarness, type RegistryHarness } from './private-registry-harness.test-support';
import type { Snapshot } from './snapshots';

/*
 * Issue 25's pip proof on real parts: an nginx index with auth_basic (`.ci/needs/pyindex.sh`)
 * holds acme-private-utils; a repository's PYPI_ACME secret holds the password in the server's
 * SQLite (encrypted); a Python project that depends on it builds its snapshot under runsc-egress
 * with pip reaching the index only through the registry front, its pytest passes, and then a leak
 * hunt in a sandbox of that snapshot, the image's bytes, the build log and the database find no
 * form of the password (raw, base64, URL-encoded, the Basic header's user:password).
 */

let index: TestPythonIndex;
let harness: RegistryHarness;

beforeAll(async () => {
  index = await testPythonIndex();
  harness = await registryHarness('private-pip', { privateRegistries: [new URL(index.url).origin] });
});

afterAll(async () => {
  await harness?.close();
});

const environmentFile = () => `pythonIndex: { url: "${index.url}", username: ${index.username}, token: PYPI_ACME }\n`;

/** A Python project (pyproject, setuptools) whose code and pytest test use acme-private-utils. */
function fixture(name: string, environment: string | undefined): string {
  const files: Record<string, string> = {
    'pyproject.toml': [
      '[build-system]', 'requires = ["setuptools"]', 'build-backend = "setuptools.build_meta"', '',
      '[project]', `name = "${name.replace('/', '-')}"`, 'version = "0.1.0"', 'dependencies = ["acme-private-utils==1.0.0"]', '',
      '[tool.setuptools]', 'py-modules = ["app"]', '',
    ].join('\n'),
    'app.py': 'from acme_private_utils import shout\n\n\ndef greet(name):\n    return shout(f"hello {name}")\n',
    'tests/test_app.py': 'import acme_private_utils\n\nimport app\n\n\ndef test_greet():\n    assert app.greet("ada") == "HELLO ADA!"\n    assert acme_private_utils.shout("x") == "X!"\n',
    '.gitignore': '.venv/\n__pycache__/\n*.egg-info/\n',
  };
  if (environment !== undefined) files['.dockhand/environment.yml'] = environment;
  return harness.repo(name, files);
}

const build = (name: string, sha: string): Promise<Snapshot> => harness.build(name, sha);
const buildLog = (snapshot: Snapshot): string => harness.buildLog(snapshot);

describe('pip through the registry front with a repository\'s Python index (runsc-egress)', () => {
  let snapshot: Snapshot;

  it('the snapshot installs the private package from the index through the front; its pytest passes; the build held no credential', async () => {
    await harness.secrets.set('acme/py', 'PYPI_ACME', index.token, 'alice');
    const sha = fixture('acme/py', environmentFile());
    snapshot = await build('acme/py', sha);
    expect(snapshot.environment.pythonIndex).toEqual({ url: index.url, username: index.username, token: 'PYPI_ACME' });
    const log = buildLog(snapshot);
    for (const form of pythonSecretForms(index)) expect(log).not.toContain(form);
    expect(log).toMatch(/^# pip through the registry front: PIP_INDEX_URL=http:\/\/\d+\.\d+\.\d+\.\d+:\d+\/-\/pip\/simple\/$/m);
    expect(log).toMatch(/^# repository secrets used \(names only\): PYPI_ACME \(registry front for the Python index: [1-9]\d* requests? upstream\)$/m);
    // Installed, not run from its source tree (the recipe's command, in the log's first lines, names that fallback).
    expect(log).not.toMatch(/^dockhand: the project could not be built/m);
    expect((await harness.secrets.list('acme/py'))[0]?.lastUsedBy).toBe(`snapshot build ${snapshot.key} registry front`);
    const sandbox = await harness.driver.create({ image: snapshot.image, baseSha: snapshot.sha, snapshot: snapshot.identity });
    try {
      const tests = await sandbox.exec({ cmd: ['sh', '-c', snapshot.environment.test.command] });
      expect(tests.exitCode, tests.stdout + tests.stderr).toBe(0);
      expect(tests.stdout).toMatch(/1 passed/);
      const forms = pythonSecretForms(index);
      const hunt = [
        'env',
        '.venv/bin/pip config list 2>&1',
        'cat /etc/pip.conf ~/.pip/pip.conf ~/.config/pip/pip.conf ~/.netrc 2>&1',
        "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'",
      ].join('; echo ----; ');
      const seen = await sandbox.exec({ cmd: ['sh', '-c', hunt] });
      for (const form of forms) expect(seen.stdout + seen.stderr).not.toContain(form);
      expect(seen.stdout).not.toContain('PIP_INDEX_URL');
      const control = `dockhand-control-${process.pid}`;
      const patterns = forms.map((form) => `-e '${form}'`).join(' ');
      const grep = await sandbox.exec({ cmd: ['sh', '-c', `printf %s '${control}' > /tmp/control.txt; grep -rIl -F ${patterns} -e '${control}' /workspace /home /tmp /etc 2>/dev/null; true`], timeoutMs: 300_000 });
      expect(grep.stdout.trim().split('\n')).toEqual(['/tmp/control.txt']);
    } finally {
      await sandbox.destroy();
    }
    const count = (await promisify(execFile)('bash', ['-c', `docker save '${snapshot.image}' | grep -a -c -F ${pythonSecretForms(index).map((_, i) => `-e "$${i}"`).join(' ')} || true`, ...pythonSecretForms(index)], { maxBuffer: 1024 * 1024 })).stdout.trim();
    expect(count).toBe('0');
    harness.store.db.pragma('wal_checkpoint(TRUNCATE)');
    const database = readFileSync(join(harness.dataDir, 'dockhand.db')).toString('latin1');
    for (const form of pythonSecretForms(index)) expect(database).not.toContain(form);
  }, 900_000);

  it('a repository without the index configured cannot get the package: its snapshot has no acme_private_utils', async () => {
    const sha = fixture('acme/py-other', undefined);
    // pip has no index here; the project's install falls back to its source tree (python-install.ts), without the package.
    const built = await build('acme/py-other', sha);
    expect(buildLog(built)).toMatch(/No matching distribution found for acme-private-utils/);
    const sandbox = await harness.driver.create({ image: built.image, baseSha: built.sha, snapshot: built.identity });
    try {
      const probe = await sandbox.exec({ cmd: ['sh', '-c', '.venv/bin/python -c "import acme_private_utils" 2>&1; find / -name "acme_private_utils*" -not -path "/proc/*" 2>/dev/null; true'] });
      expect(probe.stdout).toContain("No module named 'acme_private_utils'");
      expect(probe.stdout).not.toMatch(/^\/.*acme_private_utils/m);
    } finally {
      await sandbox.destroy();
    }
  }, 600_000);

  it('a missing secret and a wrong password fail naming the secret, the index\'s 401 and the command; the fix builds', async () => {
    const sha = fixture('acme/py-wrong', environmentFile());
    await expect(build('acme/py-wrong', sha)).rejects.toMatchObject({
      message: expect.stringContaining('acme/py-wrong has no secret PYPI_ACME, which .dockhand/environment.yml names for the Python index'),
      hint: 'dockhand secret set acme/py-wrong PYPI_ACME --from-file <token file>',
    });
    await harness.secrets.set('acme/py-wrong', 'PYPI_ACME', 'not-the-password', 'alice');
    const refused = await build('acme/py-wrong', sha).then(() => undefined, (error: unknown) => error);
    expect(refused).toMatchObject({
      message: expect.stringContaining(`registry ${new URL(index.url).origin}/ answered 401 (not authenticated) for the Python index with the token of secret PYPI_ACME`),
      hint: 'set a token that registry accepts: dockhand secret set acme/py-wrong PYPI_ACME --from-file <token file>',
    });
    expect(String((refused as Error).message)).not.toContain('not-the-password');
    await harness.secrets.set('acme/py-wrong', 'PYPI_ACME', index.token, 'alice');
    expect((await build('acme/py-wrong', sha)).built).toBe(true);
  }, 900_000);
});
