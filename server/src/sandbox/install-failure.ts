/*
 * Why a snapshot's dependency install failed, in words a repository owner can act on: which
 * package's lifecycle script failed, which hosts it tried that the egress allowlist refused, and
 * the two ways out (allow the host, or skip that package's scripts). Read from the install's
 * output (npm with --foreground-scripts, pnpm, yarn classic and berry) and from the hosts the
 * egress proxy refused. Pure.
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
  const actions: string[] = [];
  if (diagnosis.blockedHosts.length > 0) actions.push(`allow the host with \`egressHosts: [${diagnosis.blockedHosts.join(', ')}]\` in .dockhand/environment.yml`);
  if (diagnosis.packageName && !input.setupFailed) actions.push(`skip that package's scripts with \`skipScripts: [${diagnosis.packageName}]\` in .dockhand/environment.yml`);
  if (diagnosis.cause?.includes('lacks the shared library')) actions.push('install its Debian package in the base image (sandbox-images/base/install.sh), or pin an older Node with `node:` in .dockhand/environment.yml');
  if (actions.length === 0) actions.push('fix the install (or set `install:` in .dockhand/environment.yml) and push a new commit');
  const hint = `${actions.join(', or ')}; full log: ${input.logPath}`;
  const message = `snapshot build failed (exit ${input.exitCode}): ${what}${reached}. To fix: ${hint}.\nLast output:\n${input.tail}`;
  return { message, hint };
}
