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
   * Which package's lifecycle script asked for each blocked host, where the output tells: the
   * script running when the proxy refused it (the build marks that moment in the output, see
   * REFUSED_MARKER), else the script whose output names the host.
   */
  hostRequesters?: HostRequester[];
  /** A Python requirement pip found in no index (`No matching distribution found for …`). */
  missingRequirement?: string;
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

export interface HostRequester {
  host: string;
  packageName: string;
  script?: string;
}

/** What the build writes into the install's transcript when the egress proxy refuses a target. */
export const REFUSED_MARKER = '::dockhand:refused:';

const LIFECYCLE = '(preinstall|install|postinstall|prepare|prepublish)';

/**
 * The lifecycle script a line shows running: npm's `> pkg@1.0.0 postinstall` header (npm runs
 * foreground scripts one at a time), or pnpm's `node_modules/.pnpm/…/node_modules/pkg postinstall$ …`
 * start and `…/pkg postinstall: …` output lines (each prefixed with its package).
 */
function scriptOfLine(line: string): { packageName: string; script: string } | undefined {
  const npm = new RegExp(`^> ((?:@[^/\\s]+/)?[^@\\s]+)@\\S* ${LIFECYCLE}\\s*$`).exec(line);
  if (npm?.[1] && npm[2]) return { packageName: npm[1], script: npm[2] };
  const pnpm = new RegExp(`^\\s*(\\S*node_modules/\\S+) ${LIFECYCLE}(?::|\\$)`).exec(line);
  const name = pnpm?.[1] ? packageFromPath(pnpm[1]) : undefined;
  if (name && pnpm?.[2]) return { packageName: name, script: pnpm[2] };
  return undefined;
}

/** pnpm's line that ends a script (`…/pkg postinstall: Done` / `: Failed`). */
function endOfScript(line: string): { packageName: string; script: string } | undefined {
  const match = new RegExp(`^\\s*(\\S*node_modules/\\S+) ${LIFECYCLE}: (?:Done|Failed)\\s*$`).exec(line);
  const name = match?.[1] ? packageFromPath(match[1]) : undefined;
  return name && match?.[2] ? { packageName: name, script: match[2] } : undefined;
}

/**
 * The scripts running at line `at`: npm runs foreground scripts one at a time (the last header);
 * pnpm side by side (every `pkg postinstall$ …` start not yet followed by its `Done` / `Failed`),
 * latest start last.
 */
function runningAt(lines: readonly string[], at: number): Array<{ packageName: string; script: string }> {
  const running = new Map<string, { packageName: string; script: string }>();
  for (let index = 0; index < at; index++) {
    const line = lines[index] ?? '';
    const ended = endOfScript(line);
    if (ended) {
      running.delete(`${ended.packageName} ${ended.script}`);
      continue;
    }
    const script = scriptOfLine(line);
    if (!script) continue;
    if (line.startsWith('> ')) running.clear();
    const key = `${script.packageName} ${script.script}`;
    running.delete(key);
    running.set(key, script);
  }
  return [...running.values()];
}

/** What a script prints when its download was refused (the proxy's 403, a tunnel that failed, no name resolution). */
const NETWORK_FAILURE = /\b(?:403|Forbidden|tunnel(?:ing)?|proxy|ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|getaddrinfo|socket hang up|fetch failed|download)/i;

/**
 * For each blocked host, the script that asked for it: the one whose own output line names it,
 * else the one running at the refusal's marker (else at the first line naming the host). Where
 * pnpm ran several then, the one whose output after the refusal names the host, or says that a
 * download failed, else the latest started (census: puppeteer's browser download was refused
 * while esbuild's postinstall, started after it, was running too, and esbuild was named).
 */
function requestersOf(lines: readonly string[], hosts: readonly string[]): HostRequester[] {
  const found: HostRequester[] = [];
  for (const host of hosts) {
    let at = lines.findIndex((line) => line.startsWith(REFUSED_MARKER) && line.slice(REFUSED_MARKER.length).toLowerCase().replace(/:\d+$/, '') === host);
    if (at < 0) at = lines.findIndex((line) => !line.startsWith(REFUSED_MARKER) && line.toLowerCase().includes(host));
    if (at < 0) continue;
    // A pnpm output line naming the host carries its own package.
    const named = lines.find((line) => !line.startsWith(REFUSED_MARKER) && line.toLowerCase().includes(host) && scriptOfLine(line) && !/\$ /.test(line));
    const candidates = runningAt(lines, at);
    const own = (named ? scriptOfLine(named) : undefined) ?? scriptOfLine(lines[at] ?? '');
    const after = lines.slice(at + 1);
    const says = (candidate: { packageName: string; script: string }, pattern: RegExp): boolean =>
      after.some((line) => {
        const of = scriptOfLine(line) ?? endOfScript(line);
        return of?.packageName === candidate.packageName && of.script === candidate.script && pattern.test(line.replace(/^.*?(?::|\$)\s/, ''));
      });
    const chosen =
      own ??
      (candidates.length <= 1
        ? candidates[0]
        : (candidates.find((candidate) => says(candidate, new RegExp(host.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i'))) ??
          candidates.find((candidate) => says(candidate, NETWORK_FAILURE)) ??
          candidates[candidates.length - 1]));
    if (chosen) found.push({ host, packageName: chosen.packageName, script: chosen.script });
  }
  return found;
}

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
  // pnpm runs scripts side by side: the one that says Failed, not the last to print.
  const pnpm = [...output.matchAll(new RegExp(`(\\S*node_modules/\\S+) ${LIFECYCLE}: Failed`, 'g'))].pop() ?? [...output.matchAll(new RegExp(`(\\S*node_modules/\\S+) ${LIFECYCLE}(?::|\\$)`, 'g'))].pop();
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
  for (const match of output.matchAll(new RegExp(`^${REFUSED_MARKER}([a-z0-9.-]+)`, 'gim'))) hosts.add((match[1] ?? '').toLowerCase());
  diagnosis.blockedHosts = [...hosts].filter((host) => host !== '');
  const requesters = requestersOf(output.split('\n'), diagnosis.blockedHosts);
  if (requesters.length > 0) diagnosis.hostRequesters = requesters;
  // No package named as failing: the one whose script was refused is the likeliest.
  if (!diagnosis.packageName && requesters[0]) {
    diagnosis.packageName = requesters[0].packageName;
    if (requesters[0].script) diagnosis.script = requesters[0].script;
  }
  const missing = [...output.matchAll(/No matching distribution found for (\S+)/g)].pop()?.[1];
  if (missing) diagnosis.missingRequirement = missing;
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

/** "it tried to reach a.com", or, where the output tells who asked, "the postinstall script of package "puppeteer" tried to reach a.com". */
function reachedBy(diagnosis: InstallDiagnosis): string {
  const requesters = diagnosis.hostRequesters ?? [];
  const parts: string[] = [];
  const unattributed = diagnosis.blockedHosts.filter((host) => !requesters.some((entry) => entry.host === host));
  const byScript = new Map<string, string[]>();
  for (const entry of requesters) {
    const who = `the ${entry.script ?? 'lifecycle'} script of package "${entry.packageName}"`;
    byScript.set(who, [...(byScript.get(who) ?? []), entry.host]);
  }
  const failed = diagnosis.packageName ? `the ${diagnosis.script ?? 'lifecycle'} script of package "${diagnosis.packageName}"` : undefined;
  for (const [who, hosts] of byScript) parts.push(`${who === failed ? 'it' : who} tried to reach ${hosts.join(', ')}`);
  if (unattributed.length > 0) parts.push(`${parts.length === 0 ? 'it' : 'the install'} tried to reach ${unattributed.join(', ')}`);
  return parts.join('; ');
}

/** The build error's text: what failed, what was refused, what to do, where the log is. */
/**
 * `pipIndex`: the Python package index the build used (DOCKHAND_PIP_INDEX_URL), null when none is
 * configured (pip then looks in no index), undefined when not known.
 */
export function describeInstallFailure(input: { exitCode: number; tail: string; diagnosis: InstallDiagnosis; logPath: string; setupFailed: boolean; pipIndex?: string | null }): { message: string; hint: string } {
  const { diagnosis } = input;
  const missing = diagnosis.missingRequirement;
  const where = input.pipIndex ? `in the package index ${input.pipIndex}` : input.pipIndex === null ? 'in no index: no package index is configured' : 'in the package index';
  const what = input.setupFailed
    ? '.dockhand/setup.sh failed'
    : diagnosis.packageName
      ? `the ${diagnosis.script ?? 'lifecycle'} script of package "${diagnosis.packageName}" failed`
      : missing
        ? `the Python requirement "${missing}" is not in the base image and pip looked for it ${where}`
        : diagnosis.cause
          ? diagnosis.cause.includes('lacks the shared library')
            ? diagnosis.cause
            : `the dependency install failed with ${diagnosis.cause}`
          : 'the dependency install failed';
  const reached = diagnosis.blockedHosts.length > 0 ? `; ${reachedBy(diagnosis)}, which the egress allowlist does not allow` : '';
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
  if (diagnosis.blockedHosts.length > 0) actions.push(`allow the host with \`egressHosts: [${diagnosis.blockedHosts.join(', ')}]\` in .dockhand/environment.yml (once an admin has allowed it for the fleet in DOCKHAND_EGRESS_HOSTS)`);
  if (missing && !input.setupFailed) {
    actions.push(
      input.pipIndex
        ? `check that ${input.pipIndex} serves "${missing}" (or point DOCKHAND_PIP_INDEX_URL at an index that does)`
        : 'set DOCKHAND_PIP_INDEX_URL to your Python package index (builds then use it and the egress proxy allows its host)',
    );
  }
  const skip = [...new Set([...(diagnosis.packageName ? [diagnosis.packageName] : []), ...(diagnosis.hostRequesters ?? []).map((entry) => entry.packageName)])];
  if (skip.length > 0 && !input.setupFailed) actions.push(`skip ${skip.length === 1 ? "that package's" : 'those packages\''} scripts with \`skipScripts: [${skip.join(', ')}]\` in .dockhand/environment.yml`);
  if (diagnosis.cause?.includes('lacks the shared library')) actions.push('install its Debian package in the base image (sandbox-images/base/install.sh), or pin an older Node with `node:` in .dockhand/environment.yml');
  if (actions.length === 0) actions.push('fix the install (or set `install:` in .dockhand/environment.yml) and push a new commit');
  const hint = `${actions.join(', or ')}; full log: ${input.logPath}`;
  const message = `snapshot build failed (exit ${input.exitCode}): ${what}${reached}${backend}. To fix: ${hint}.\nLast output:\n${input.tail}`;
  return { message, hint };
}

/** The most of an install's output kept for the diagnosis (the front goes first). */
const TRANSCRIPT_LIMIT = 8 * 1024 * 1024;

/**
 * An install's stdout and stderr in the order they arrived (collected apart, npm's script headers
 * on stdout and its errors on stderr lose their order), with a REFUSED_MARKER line wherever the
 * egress proxy had refused a target by then: `watch` is called on each chunk and on a timer.
 */
export class InstallTranscript {
  private text = '';
  private seen = 0;

  constructor(private readonly refused: readonly string[]) {}

  push(chunk: string): void {
    this.watch();
    this.text += chunk;
    if (this.text.length > TRANSCRIPT_LIMIT) this.text = this.text.slice(-TRANSCRIPT_LIMIT);
  }

  /** Marks the targets refused since the last call, at the current end of the output. */
  watch(): string[] {
    const fresh = this.refused.slice(this.seen);
    this.seen = this.refused.length;
    for (const target of fresh) this.text += `${this.text === '' || this.text.endsWith('\n') ? '' : '\n'}${REFUSED_MARKER}${target}\n`;
    return fresh;
  }

  toString(): string {
    return this.text;
  }
}
