import type { EnvironmentRecipe, PackageManagerName } from '@dockhand/protocol';
import type { CiReading, CiStep } from './ci-workflow';
import { isGlobalInstall } from './ci-step-kind';
import type { EnvironmentFile } from './environment-file';
import { NPM_GLOBAL_PREFIX } from './environment';
import { projectInstall, tableKeys } from './python-install';
import { PYTHON_REQUIREMENTS_HELPER } from './python-requirements';
import { makeTarget, pipArguments } from './make-target';
import { toxEnvironment, type ToxEnvironment } from './tox-env';

/*
 * The CI's test job (ci-workflow.ts) applied to a detected recipe (recipe.ts): its steps, its
 * install when the sandbox can run it as written, its Python version. Pure.
 */
/** The base image's python3 (Debian bookworm): the CI matrix cell nearest it is followed. */
export const SANDBOX_PYTHON = '3.11';

/** A recipe's sources hold at most 200 characters (protocol `Source`). */
function clip(text: string): string {
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

/** The steps as one shell command: each in its directory with its env, joined with ` && ` (what `test.command` shows). */
export function joinedCommand(steps: readonly CiStep[]): string {
  return steps
    .map((step) => {
      const env = Object.entries(step.env ?? {});
      if (!step.cwd && env.length === 0 && !step.command.includes('\n')) return step.command;
      const cd = step.cwd ? `cd ${shellQuote(step.cwd)} && ` : '';
      const exports = env.length > 0 ? `export ${env.map(([key, value]) => `${key}=${shellQuote(value)}`).join(' ')} && ` : '';
      return `(${cd}${exports}${step.command}${step.command.includes('\n') ? '\n' : ''})`;
    })
    .join(' && ');
}

/**
 * tox and nox make their environments (and pip-install into them) when they run; the sandbox has
 * no network then. Each single-line tox / nox step is run once in the install with `--notest` /
 * `--install-only` (its env and directory as the step's), so the test run finds them made. The
 * step itself stays as written.
 */
export function provisionCommands(steps: readonly CiStep[]): string[] {
  const out: string[] = [];
  for (const step of steps) {
    if (step.command.includes('\n') || /&&|\|\||;/.test(step.command)) continue;
    const tool = /^(?:[A-Za-z_]\w*=\S*\s+)*(?:python3?\s+-m\s+)?(tox|nox)(?:\s|$)/.exec(step.command)?.[1];
    if (!tool) continue;
    const flag = tool === 'tox' ? '--notest' : '--install-only';
    const dash = step.command.indexOf(' -- ');
    const command = dash < 0 ? `${step.command} ${flag}` : `${step.command.slice(0, dash)} ${flag}${step.command.slice(dash)}`;
    out.push(joinedCommand([{ ...step, command }]));
  }
  return out;
}

/** The pnpm major taken when the CI uses pnpm without naming a version and no lockfile says one (recipe.ts's default for `packageManager: pnpm`). */
const CI_PNPM_DEFAULT = '9';
const PNPM_LINE = /(?:^|&&\s*|\n)\s*pnpm\s/;

/**
 * pnpm where the CI uses it (pnpm/action-setup or pnpm/setup, or `pnpm install` among its installs)
 * and no lockfile says another manager: the action's version, else the lockfile's, else the default.
 * A repository that keeps no lockfile and no packageManager is installed with the CI's pnpm, not npm.
 */
export function ciPnpm(ci: CiReading, fromLockfile: { name: PackageManagerName } | undefined): { name: 'pnpm'; range: string; source: string } | undefined {
  if (!ci.job || (fromLockfile && fromLockfile.name !== 'pnpm')) return undefined;
  const version = ci.job.pnpm;
  if (version !== undefined && /^\d/.test(version)) return { name: 'pnpm', range: version, source: `${ci.job.file} ${ci.job.pnpmAction ?? 'pnpm/action-setup'}` };
  if (fromLockfile) return undefined;
  const installs = ci.job.install.some((line) => PNPM_LINE.test(line));
  if (version === undefined && !installs) return undefined;
  return { name: 'pnpm', range: CI_PNPM_DEFAULT, source: `${ci.job.file} ${version !== undefined ? ci.job.pnpmAction ?? 'pnpm/action-setup' : 'pnpm install'} (no lockfile)` };
}

/**
 * The install with the CI's global npm installs last, in NPM_GLOBAL_PREFIX (`npm ci` and pnpm
 * would otherwise clear node_modules after them); the commands stay as written.
 */
function withGlobalInstalls(command: string, globals: readonly string[]): string {
  if (globals.length === 0) return command;
  return [command, `export NPM_CONFIG_PREFIX=${NPM_GLOBAL_PREFIX} PATH="${NPM_GLOBAL_PREFIX}/bin:$PATH"`, ...globals].join(' && ');
}

/**
 * The CI's test job over detection: its test and check steps as written, and its install when
 * the sandbox can run every install step as written (npm, pnpm, yarn, pip; pip in the `.venv`
 * that PATH puts first) and environment.yml does not hold lifecycle scripts back (its skipScripts
 * need the detected install's rebuild). Without a test job, detection stays and says why.
 */
export function followCi(recipe: EnvironmentRecipe, ci: CiReading, file: EnvironmentFile | undefined, python: boolean, toxIni?: string, makefile?: string): void {
  followJob(recipe, ci, file, python, toxIni);
  if (!python || !recipe.test.steps) return;
  // `make <target>` whose recipe pip-installs first: those lines go to the build (make-target.ts).
  const installs: string[] = [];
  const targets: string[] = [];
  const steps = recipe.test.steps.flatMap((step) => {
    const make = makeTarget(step.command, makefile);
    if (!make) return [step];
    targets.push(make.target);
    installs.push(...make.installs.map((line) => `{ ${line.replace(/^(?:python3?\s+-m\s+)?pip3?\s/, '.venv/bin/pip ')} || .venv/bin/python ${PYTHON_REQUIREMENTS_HELPER} ${pipArguments(line).join(' ')}; }`));
    return make.steps.map((made) => ({ ...made, ...(step.cwd ? { cwd: step.cwd } : {}), ...(step.env ? { env: step.env } : {}) }));
  });
  if (targets.length === 0) return;
  recipe.test = { command: joinedCommand(steps), source: clip(`${recipe.test.source} → Makefile ${targets.join(', ')} (its pip installs run in the build)`), steps: steps.slice(0, 50) };
  if (file?.install === undefined) recipe.install = { command: [recipe.install.command, ...installs].join(' && '), source: clip(`${recipe.install.source}; Makefile ${targets.join(', ')}'s pip installs`) };
}

function followJob(recipe: EnvironmentRecipe, ci: CiReading, file: EnvironmentFile | undefined, python: boolean, toxIni?: string): void {
  if (!ci.job) {
    if (ci.reason !== 'no workflow in .github/workflows') recipe.test.source = clip(`${recipe.test.source} (CI not followed: ${ci.reason})`);
    return;
  }
  const { job } = ci;
  const through = job.runsThrough.length > 0 ? ` via ${job.runsThrough.join(', ')}` : '';
  recipe.test = { command: joinedCommand(job.steps), source: clip(`${job.source}${through}`), steps: job.steps };
  if (python && followTox(recipe, job.steps, toxIni, file)) return;
  if (python && recipe.python && job.python) {
    // The sandbox has one Python; a cell on another line is said, not pretended.
    const same = job.python.replace(/^(\d+\.\d+).*$/, '$1') === SANDBOX_PYTHON;
    recipe.python.version = same ? job.python : SANDBOX_PYTHON;
    if (!same) recipe.python.source = clip(`${recipe.python.source}; the CI's cell asks for Python ${job.python}, the sandbox has Debian's ${SANDBOX_PYTHON}`);
  }
  const scriptsHeld = file?.lifecycleScripts === false || (file?.skipScripts ?? []).length > 0;
  const provision = provisionCommands(job.steps);
  const globals = job.install.filter(isGlobalInstall);
  const installs = job.install.filter((line) => !isGlobalInstall(line));
  if (installs.length === 0 || job.otherInstalls.length > 0 || scriptsHeld) {
    if (file?.install !== undefined) return;
    const added = [provision.length > 0 ? `the CI's ${job.runsThrough.join(', ')} environments` : '', globals.length > 0 ? "the CI's global npm installs" : ''].filter(Boolean);
    if (added.length > 0) recipe.install = { command: withGlobalInstalls([recipe.install.command, ...provision].join(' && '), globals), source: clip(`${recipe.install.source}; ${added.join(', ')}`) };
    return;
  }
  const pip = (line: string): boolean => /\bpip3?\s+install\b/.test(line);
  const venv = python || installs.some(pip) ? ['python3 -m venv --system-site-packages .venv'] : [];
  let command = [...venv, ...installs].join(' && ');
  if (python && installs.every(pip)) {
    // Without a package index (none configured, or one that lacks a package), the CI's pip install
    // fails where the detected one (Debian's packages, no build isolation) may not: it follows, said in the log.
    command = `${venv.join('')} && { ${installs.join(' && ')}; } || { echo "dockhand: the CI's pip install failed; the detected install follows" >&2 && ${recipe.install.command}; }`;
  }
  recipe.install = { command: withGlobalInstalls([command, ...provision].join(' && '), globals), source: clip(`${job.via ? `${job.via} › ` : ''}${job.file} › ${job.job} (install steps)`) };
}

/**
 * The extras of pyproject.toml that a CI's own Python installer names: `pdm install -G toc -G
 * codehilite` (pdm's groups include the optional dependencies), `poetry install -E a --extras "b c"`,
 * `uv sync --extra a`, and `--all-extras` / `-G :all`. Names the project does not declare as extras
 * (a pdm dev group, a poetry group) are left to the detected install.
 */
export function ciExtras(lines: readonly string[], pyproject: string | undefined): string[] {
  if (pyproject === undefined) return [];
  const declared = tableKeys(pyproject, 'project.optional-dependencies');
  const named = new Set<string>();
  for (const line of lines.flatMap((entry) => entry.split(/\s*(?:&&|;|\n)\s*/))) {
    if (!/^(?:pdm\s+(?:install|sync)|poetry\s+install|uv\s+sync)\b/.test(line.trim())) continue;
    if (/(?:^|\s)(?:--all-extras|-G\s*:all|--group[=\s]:all)(?=\s|$)/.test(line)) for (const extra of declared) named.add(extra);
    for (const match of line.matchAll(/(?:^|\s)(?:-G|--group|-E|--extras?)(?:\s+|=)(?:"([^"]*)"|'([^']*)'|(\S+))/g)) {
      for (const name of (match[1] ?? match[2] ?? match[3] ?? '').split(/[\s,]+/)) if (name) named.add(name);
    }
  }
  return declared.filter((extra) => named.has(extra));
}

/**
 * pdm, poetry and uv cannot run in the sandbox, so a CI that installs with them is not followed or
 * its install is not (census frostming/marko: `pdm install -G toc -G codehilite`, then `pdm run
 * pytest`); the extras those installs name are still the project's own, and its tests import them
 * (marko's 4 codehilite tests failed at the base for want of pygments). After the detected
 * install, the project is installed again with them (pip, else Debian's package, else named).
 */
export function addCiExtras(recipe: EnvironmentRecipe, files: Readonly<Record<string, string | undefined>>, file: EnvironmentFile | undefined): void {
  if (!recipe.python || file?.install !== undefined) return;
  const lines = Object.entries(files)
    .filter(([path]) => path.startsWith('.github/workflows/'))
    .flatMap(([, text]) => (text ?? '').split('\n').map((line) => line.replace(/^\s*(?:-\s+)?(?:run:\s*)?/, '').trim()));
  const extras = ciExtras(lines, files['pyproject.toml']);
  if (extras.length === 0) return;
  recipe.install = { command: `${recipe.install.command} && ${projectInstall(extras)}`, source: clip(`${recipe.install.source}; the extras its CI's installer names (${extras.join(', ')})`) };
}

/**
 * A test step that runs tox becomes its environment's commands (tox-env.ts), and the install that
 * environment's: its deps and the project with its extras in the .venv (a project the base
 * image's backends cannot build on its source tree). False where no step runs tox or tox.ini
 * does not say clearly. environment.yml's install still wins.
 */
function followTox(recipe: EnvironmentRecipe, steps: readonly CiStep[], toxIni: string | undefined, file: EnvironmentFile | undefined): boolean {
  const found: ToxEnvironment[] = [];
  const followed = steps.flatMap((step) => {
    const tox = toxEnvironment(step.command, toxIni, SANDBOX_PYTHON);
    if (!tox) return [step];
    found.push(tox);
    return tox.steps.map((toxStep) => ({ ...toxStep, ...(step.env || toxStep.env ? { env: { ...step.env, ...toxStep.env } } : {}) }));
  });
  if (found.length === 0) return false;
  const names = found.map((tox) => tox.name).join(', ');
  recipe.test = { command: joinedCommand(followed), source: clip(`${recipe.test.source} → tox.ini [testenv] ${names} (its commands; tox would pip-install its environments from an index)`), steps: followed.slice(0, 50) };
  if (file?.install !== undefined) return true;
  const install = ['python3 -m venv --system-site-packages .venv'];
  const deps = [...new Set(found.flatMap((tox) => tox.deps))];
  // As tox would, though a dep the index lacks may come from Debian, and one neither has is named (python-requirements.ts).
  const quoted = deps.map(shellQuote).join(' ').replace(/'(-[rc]) /g, "$1 '");
  if (deps.length > 0) install.push(`{ .venv/bin/pip install -q ${quoted} || .venv/bin/python ${PYTHON_REQUIREMENTS_HELPER} ${quoted}; }`);
  if (found.some((tox) => !tox.skipInstall)) {
    const extras = [...new Set(found.flatMap((tox) => tox.extras))];
    install.push(projectInstall(extras));
  }
  recipe.install = { command: install.join(' && '), source: clip(`tox.ini [testenv] ${names}: deps${found.some((tox) => !tox.skipInstall) ? ' and the project' : ''}`) };
  return true;
}
