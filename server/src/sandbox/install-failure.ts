import { z } from 'zod';

/*
 * Why a snapshot's dependency install failed, in words a repository owner can act on: which
 * package's lifecycle script failed, which hosts it tried that the egress allowlist refused, and
 * the two ways out (allow the host, or skip that package's scripts). Read from the install's
 * output (npm with --foreground-scripts, pnpm, yarn classic and berry) and from the hosts the
 * egress proxy refused; for a Python project, also from BUILD_REQUIREMENTS_PROBE's answer (run in
 * the build container by the caller). Pure.
 */

export interface InstallDiagnosis {
  /** The package whose script failed, when the output names one. */
  packageName?: string;
  /** The lifecycle script (postinstall, install, …), when known. */
  script?: string;
  /** Hosts outside the allowlist the install tried to reach. */
  blockedHosts: string[];
  /**
   * The error a Python install died of (`ValueError: invalid pyproject.toml config: …`), which
   * pip prints inside its subprocess output, above a traceback and its own "This error
   * originates from a subprocess" lines: the tail alone shows the stack, not the cause.
   */
  cause?: string;
  /**
   * pyproject.toml's `build-system.requires` that the build's Python does not satisfy (Debian's
   * setuptools 66 under a `setuptools>=77`), with the version installed, if any. The editable
   * install runs without build isolation (the package index may be absent), so pip builds with
   * what is installed and never says the backend is too old: setuptools 66 fails on the newer
   * pyproject instead (PEP 639's `license = "MIT"`: `invalid pyproject.toml config`).
   */
  unmetBuildRequirements?: UnmetBuildRequirement[];
}

const UnmetBuildRequirement = z.object({ requirement: z.string().min(1).max(300), installed: z.string().max(100).nullable() });
export type UnmetBuildRequirement = z.infer<typeof UnmetBuildRequirement>;

/**
 * A Python program run in the workspace after a failed install (by the venv's python when there is
 * one, which sees Debian's packages too): prints, as JSON, each of pyproject.toml's
 * `build-system.requires` whose marker holds and that no installed distribution satisfies. Reads
 * versions with importlib.metadata (importing setuptools beside pip trips its distutils check),
 * compares with `packaging` (Debian's python3-packaging, else pip's own copy). Prints [] when
 * there is no pyproject.toml or it cannot be read; a requirement it cannot parse is left out.
 */
export const BUILD_REQUIREMENTS_PROBE = `
import json
from importlib.metadata import PackageNotFoundError, version
try:
    import tomllib
except ImportError:
    tomllib = None
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
unmet = []
try:
    with open('pyproject.toml', 'rb') as file:
        requires = tomllib.load(file).get('build-system', {}).get('requires', []) if tomllib else []
except (OSError, ValueError):
    requires = []
for text in requires if isinstance(requires, list) else []:
    try:
        requirement = Requirement(str(text))
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
    except Exception:
        continue
    try:
        installed = version(requirement.name)
    except PackageNotFoundError:
        installed = None
    if installed is None or not requirement.specifier.contains(installed, prereleases=True):
        unmet.append({'requirement': str(text)[:300], 'installed': installed})
print(json.dumps(unmet))
`;

/** BUILD_REQUIREMENTS_PROBE's output; anything else (no Python, a crash) reads as nothing unmet. */
export function readBuildRequirementsProbe(stdout: string): UnmetBuildRequirement[] {
  try {
    const parsed = z.array(UnmetBuildRequirement).safeParse(JSON.parse(stdout.trim().split('\n').pop() ?? ''));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

const LIFECYCLE = '(preinstall|install|postinstall|prepare|prepublish)';

function packageFromPath(path: string): string | undefined {
  const tail = path.split('node_modules/').pop();
  if (!tail || tail === path) return undefined;
  const parts = tail.split('/').filter((part) => part !== '');
  if (parts[0]?.startsWith('@')) return parts[1] ? `${parts[0]}/${parts[1]}` : undefined;
  return parts[0];
}

function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;]*[A-Za-z]/g, '');
}

export function diagnoseInstall(outputRaw: string, refusedTargets: readonly string[]): InstallDiagnosis {
  const output = stripAnsi(outputRaw);
  const diagnosis: InstallDiagnosis = { blockedHosts: [] };
  // npm: "npm error path /workspace/node_modules/pkg" (npm 9: "npm ERR! path …").
  const npmPath = [...output.matchAll(/npm (?:error|ERR!) path (\S+)/g)].pop()?.[1];
  // yarn classic: "error /workspace/node_modules/pkg: Command failed."
  const yarnPath = [...output.matchAll(/error (\S*node_modules\/\S+?): Command failed/g)].pop()?.[1];
  // pnpm: "node_modules/.pnpm/pkg@1.0.0/node_modules/pkg postinstall: Failed" or "… postinstall$ cmd".
  const pnpm = [...output.matchAll(new RegExp(`(\\S*node_modules/\\S+) ${LIFECYCLE}(?::|\\$)`, 'g'))].pop();
  // yarn berry: "➤ YN0009: │ pkg@npm:1.0.0 couldn't be built successfully"
  const berry = [...output.matchAll(/YN0009: [│|]?\s*((?:@[^/\s]+\/)?[^@\s]+)@\S+ couldn't be built/g)].pop()?.[1];
  const failedPath = npmPath ?? yarnPath ?? pnpm?.[1];
  const packageName = (failedPath ? packageFromPath(failedPath) : undefined) ?? berry;
  if (packageName) diagnosis.packageName = packageName;
  if (pnpm?.[2]) diagnosis.script = pnpm[2];
  if (packageName && !diagnosis.script) {
    // npm --foreground-scripts prints "> pkg@1.0.0 postinstall" before each script it runs.
    const escaped = packageName.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    const header = [...output.matchAll(new RegExp(`^> ${escaped}@\\S+ ${LIFECYCLE}\\s*$`, 'gm'))].pop()?.[1];
    if (header) diagnosis.script = header;
  }
  const hosts = new Set<string>();
  for (const target of refusedTargets) {
    const host = target.replace(/^https?:\/\//, '').replace(/[:/].*$/, '');
    if (host) hosts.add(host.toLowerCase());
  }
  // Clients that ignore the proxy fail name resolution (the install network has no DNS).
  for (const match of output.matchAll(/(?:getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|Could not resolve host:?) ([a-z0-9.-]+\.[a-z]{2,})/gi)) hosts.add((match[1] ?? '').toLowerCase());
  diagnosis.blockedHosts = [...hosts].filter((host) => host !== '');
  const cause = missingLibrary(output) ?? pythonCause(output);
  if (cause) diagnosis.cause = cause;
  return diagnosis;
}

/** A toolchain binary the image cannot load (`node: error while loading shared libraries: libatomic.so.1: …`). */
function missingLibrary(output: string): string | undefined {
  const match = /^(\S+): error while loading shared libraries: (\S+): cannot open shared object file/m.exec(output);
  return match ? `${match[1]} cannot start: the base image lacks the shared library ${match[2]}` : undefined;
}

/** A Python exception line (`ValueError: …`, `ModuleNotFoundError: …`), not a traceback frame. */
const EXCEPTION_LINE = /^\s*((?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)): (\S.*)$/;

/** The last exception a Python install printed, with the "configuration error:" line that may follow it. */
function pythonCause(output: string): string | undefined {
  const lines = output.split('\n');
  for (let index = lines.length - 1; index >= 0; index--) {
    const match = EXCEPTION_LINE.exec(lines[index] ?? '');
    if (!match) continue;
    const next = lines[index + 1]?.trim() ?? '';
    const detail = /^configuration error: /.test(next) ? ` ${next}` : '';
    return `${match[1]}: ${match[2]?.trim()}${detail}`.slice(0, 400);
  }
  return undefined;
}

/** The build error's text: what failed, what was refused, what to do, where the log is. */
export function describeInstallFailure(input: { exitCode: number; tail: string; diagnosis: InstallDiagnosis; logPath: string; setupFailed: boolean }): { message: string; hint: string } {
  const { diagnosis } = input;
  const what = input.setupFailed
    ? '.dockhand/setup.sh failed'
    : diagnosis.packageName
      ? `the ${diagnosis.script ?? 'lifecycle'} script of package "${diagnosis.packageName}" failed`
      : diagnosis.cause
        ? diagnosis.cause.includes('lacks the shared library')
          ? diagnosis.cause
          : `the dependency install failed with ${diagnosis.cause}`
        : 'the dependency install failed';
  const reached = diagnosis.blockedHosts.length > 0 ? `; it tried to reach ${diagnosis.blockedHosts.join(', ')}, which the egress allowlist does not allow` : '';
  const unmet = diagnosis.unmetBuildRequirements ?? [];
  const backend = unmet.length > 0 && !input.setupFailed
    ? `; pyproject.toml's build-system.requires asks for ${unmet.map((entry) => `${entry.requirement} (${entry.installed === null ? 'not installed' : `installed: ${entry.installed}`})`).join(', ')}: the editable install builds it without build isolation, with the base image's Debian packages (nothing newer is fetched)`
    : '';
  const actions: string[] = [];
  if (backend) {
    actions.push(
      'skip building the project: `install: python3 -m venv --system-site-packages .venv` in .dockhand/environment.yml (with `&& .venv/bin/pip install -q -r requirements.txt` for its requirements), ' +
        'and name a test command that imports it from its source, e.g. `test: PYTHONPATH=src python3 -m pytest` for a src/ layout',
    );
  }
  if (diagnosis.blockedHosts.length > 0) actions.push(`allow the host with \`egressHosts: [${diagnosis.blockedHosts.join(', ')}]\` in .dockhand/environment.yml`);
  if (diagnosis.packageName && !input.setupFailed) actions.push(`skip that package's scripts with \`skipScripts: [${diagnosis.packageName}]\` in .dockhand/environment.yml`);
  if (diagnosis.cause?.includes('lacks the shared library')) actions.push('install its Debian package in the base image (sandbox-images/base/install.sh), or pin an older Node with `node:` in .dockhand/environment.yml');
  if (actions.length === 0) actions.push('fix the install (or set `install:` in .dockhand/environment.yml) and push a new commit');
  const hint = `${actions.join(', or ')}; full log: ${input.logPath}`;
  const message = `snapshot build failed (exit ${input.exitCode}): ${what}${reached}${backend}. To fix: ${hint}.\nLast output:\n${input.tail}`;
  return { message, hint };
}
