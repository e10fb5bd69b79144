import type { EnvironmentRecipe } from '@dockhand/protocol';
import { parse as parseYaml } from 'yaml';
import { condition, expand, type ExpressionScope } from './ci-expression';
import { classify, commandLines, isGlobalInstall, isInstallLine, launcherOf, MISSING_TOOL, runsTests, scriptLines } from './ci-step-kind';
import { isWorkflowFile, WORKFLOW_DIR, workflowFiles } from './node-ci';

/*
 * What a repository's own CI runs for its tests, read from its GitHub Actions workflows: the test
 * job, one Linux cell of its matrix, its setup-node / setup-python / pnpm versions, its install
 * steps and the test and check steps after them, each with its working directory and env, as
 * written. Pure: the caller passes the workflow texts and the top-level names.
 *
 * The job: one whose steps run tests (`npm test`, `pnpm run test:unit`, vitest, jest, pytest, tox,
 * nox, `make test`, `scripts/test`, a step named "Run tests", …), in a workflow that runs for pushes
 * or pull requests; not a release, deploy, docs, coverage-upload, browser or end-to-end job, not one
 * whose `if:` rules out a pull request (tags, schedule), not one only on Windows or macOS, not one
 * allowed to fail. Among those, a job called test / tests first, then ci / build / check, jobs with
 * services or a container, integration and lint jobs last; then ci.yml-like files, then the files'
 * and jobs' order. A job calling a reusable workflow of this repository (`uses:
 * ./.github/workflows/x.yml`) is read through it, with its `with:` as the inputs.
 *
 * Steps: `uses:` actions, set-up (echo, corepack, nvm, sudo, git config, pip upgrading itself, …)
 * and coverage uploads are left out; install lines (npm, pnpm, yarn, pip) are the install, also
 * where they lead a test step; the rest after the install are the test and check steps, as written.
 *
 * What it does not do: follow composite actions (`uses: ./.github/setup`: their install is the
 * detected one), remote reusable workflows, `fromJSON` matrices it cannot expand, tests run
 * through an action (`nick-fields/retry`), every cell of a matrix that splits the suite into parts
 * (one cell is taken), or run a job that needs a tool the sandbox lacks (bun, deno, uv, poetry,
 * pipx, …) or another job's artifacts: those fall back to detection, and `reason` says why.
 */

export type CiStep = NonNullable<EnvironmentRecipe['test']['steps']>[number];

export interface CiTestJob {
  /** The workflow file the job is written in. */
  file: string;
  /** The calling workflow and job, when reached through a reusable workflow. */
  via?: string;
  job: string;
  /** The matrix cell chosen (empty without a matrix). */
  cell: Record<string, unknown>;
  /** setup-node's `node-version` in that cell, as written. */
  nodeSpecs: string[];
  /** setup-python's `python-version` in that cell. */
  python?: string;
  /** pnpm/action-setup's or pnpm/setup's `version` ('' when it names none: package.json's packageManager or the default), and which action. */
  pnpm?: string;
  pnpmAction?: string;
  /** The install steps the sandbox can run as written (npm, pnpm, yarn, pip), in order. */
  install: string[];
  /** Install steps it cannot (`scripts/install`, `uv sync`, a browser download): detection's install stays for those. */
  otherInstalls: string[];
  steps: CiStep[];
  /** What the steps run through: `tox.ini`, `noxfile.py`, `Makefile target test`. */
  runsThrough: string[];
  /** `.github/workflows/ci.yml › test › "Run tests"`, with the cell. */
  source: string;
}

export interface CiPreference {
  /** The Node major the recipe resolved: the matrix cell on that line is taken. */
  nodeMajor?: number;
  /** The sandbox's Python (`3.11`): the cell nearest it is taken. */
  python?: string;
}

export type CiReading = { job: CiTestJob; reason?: undefined } | { job?: undefined; reason: string };

type Mapping = Record<string, unknown>;
const isMapping = (value: unknown): value is Mapping => value !== null && typeof value === 'object' && !Array.isArray(value);
const text = (value: unknown): string | undefined => (typeof value === 'string' || typeof value === 'number' ? String(value) : undefined);

const JOB_SKIPPED = /\b(?:release|releases|deploy|deployment|publish|docs?|pages|codeql|stale|labels?|lock|dependabot|coveralls|codecov|upload|benchmarks?|size|skip)\b/i;
const JOB_TEST = /^(?:tests?|unit[-_ ]?tests?|tests?[-_ ]unit)$/i;
/** Workflow files whose test job is the one pull requests meet, before `ci-alternative-runtime.yml` and the like. */
const FILE_PREFERRED = /^(?:ci|tests?|main|build|checks?|pr|pull[-_]request|nodejs|node|python|unit)\.ya?ml$/i;
const JOB_PREFERRED = /^(?:ci|build|unit|checks?|node|python)$/i;
const JOB_LATER = /(?:integration|downstream|smoke|nightly|canary|bench|windows|macos|lint)/i;
/** Browser and end-to-end jobs: the sandbox has no browser, nor network to fetch one. */
const JOB_BROWSER = /(?:e2e|browser|playwright|cypress|selenium|puppeteer|webdriver)/i;

function events(on: unknown): string[] {
  return typeof on === 'string' ? [on] : Array.isArray(on) ? on.map(String) : isMapping(on) ? Object.keys(on) : [];
}

function onPullRequests(on: unknown): boolean {
  return events(on).some((event) => ['pull_request', 'pull_request_target', 'merge_group'].includes(event));
}

/** Does the workflow run for a push to a branch or a pull request (not only for tags, a schedule, a release)? */
function runsOnChanges(on: unknown): boolean {
  if (onPullRequests(on)) return true;
  if (!events(on).includes('push')) return false;
  const push = isMapping(on) ? on.push : undefined;
  // `push: { tags: [...] }` alone runs for tags only.
  return !(isMapping(push) && push.tags !== undefined && push.branches === undefined && push['branches-ignore'] === undefined);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isMapping(value)) return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}

/** The matrix's combinations as GitHub makes them: the product of its lists, less `exclude`, with `include` merged or added. */
export function matrixCells(matrix: unknown): Array<Record<string, unknown>> | undefined {
  if (matrix === undefined) return [{}];
  if (!isMapping(matrix)) return undefined; // `${{ fromJSON(...) }}`: not known here
  const keys = Object.keys(matrix).filter((key) => key !== 'include' && key !== 'exclude');
  if (keys.some((key) => !Array.isArray(matrix[key]))) return undefined;
  let cells: Array<Record<string, unknown>> = keys.length > 0 ? [{}] : [];
  for (const key of keys) cells = cells.flatMap((cell) => (matrix[key] as unknown[]).map((value) => ({ ...cell, [key]: value })));
  // Objects (`platform: { os: ubuntu-latest, shell: bash }`) by their content, whatever the key order; scalars as GitHub prints them.
  const same = (a: unknown, b: unknown): boolean => (typeof a === 'object' && a !== null) || (typeof b === 'object' && b !== null) ? canonical(a) === canonical(b) : String(a) === String(b);
  const exclude = Array.isArray(matrix.exclude) ? matrix.exclude.filter(isMapping) : [];
  cells = cells.filter((cell) => !exclude.some((entry) => Object.entries(entry).every(([key, value]) => same(cell[key], value))));
  const originals = cells.map((cell) => ({ ...cell }));
  for (const entry of Array.isArray(matrix.include) ? matrix.include.filter(isMapping) : []) {
    let merged = false;
    cells.forEach((cell, index) => {
      const original = originals[index] ?? {};
      if (Object.entries(entry).every(([key, value]) => !(key in original) || same(original[key], value))) {
        Object.assign(cell, entry);
        merged = true;
      }
    });
    if (!merged) {
      cells.push({ ...entry });
      originals.push({ ...entry });
    }
  }
  return cells;
}

/** Is the job's `runs-on` for this cell a Linux runner (unknown counts as Linux)? */
function onLinux(runsOn: unknown, scope: ExpressionScope): boolean {
  const labels = isMapping(runsOn) ? [runsOn.group, runsOn.labels].flat() : [runsOn].flat();
  return !labels.some((label) => typeof label === 'string' && /windows|macos|mac-os|osx/i.test(expand(label, scope) ?? ''));
}

function expandEnv(env: unknown, scope: ExpressionScope): Record<string, string> {
  const out: Record<string, string> = {};
  if (!isMapping(env)) return out;
  for (const [key, raw] of Object.entries(env)) {
    const value = text(raw) ?? (typeof raw === 'boolean' ? String(raw) : undefined);
    // A secret, or anything only GitHub knows, is left out rather than guessed.
    const expanded = value === undefined ? undefined : expand(value, { ...scope, env: { ...scope.env, ...out } });
    if (expanded !== undefined) out[key] = expanded;
  }
  return out;
}

/** A working directory relative to the repository root, or undefined for the root (or one outside it). */
function relativeDirectory(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const path = value.replace(/^\/workspace\/?/, '').replace(/^\.\/?/, '').replace(/\/+$/, '');
  return path === '' || path === '.' || path.startsWith('/') || path.split('/').includes('..') ? undefined : path;
}

function major(spec: string): number | undefined {
  if (/^lts\/\*|^lts$/i.test(spec.trim())) return 22;
  const match = /^v?(\d+)/.exec(spec.trim());
  return match ? Number(match[1]) : undefined;
}

function pythonMinor(spec: string | undefined): number | undefined {
  const match = /^(?:cpython-)?3\.(\d+)/.exec(spec?.trim() ?? '');
  return match ? Number(match[1]) : undefined;
}

interface Reading {
  job: CiTestJob;
  /** Smaller first: job name preference, then order. */
  rank: number;
}

interface JobInput {
  /** A reusable workflow's inputs, as its caller gives them. */
  inputs?: Record<string, unknown>;
  file: string;
  via?: string;
  id: string;
  definition: Mapping;
  workflowEnv: unknown;
  rootFiles: readonly string[];
  preference: CiPreference;
}

/** The steps of a job, `parallel:` groups flattened into their order. */
function flatSteps(steps: unknown[]): Mapping[] {
  return steps.flatMap((step) => (isMapping(step) && Array.isArray(step.parallel) ? flatSteps(step.parallel) : isMapping(step) ? [step] : []));
}

/** The job as run in one cell, or why it is not a test job the sandbox can run. */
function jobInCell(input: JobInput, cell: Record<string, unknown>): CiTestJob | string {
  const { definition, file, id } = input;
  const base: ExpressionScope = { matrix: cell, env: {}, ...(input.inputs ? { inputs: input.inputs } : {}) };
  const workflowEnv = expandEnv(input.workflowEnv, base);
  const jobEnv = { ...workflowEnv, ...expandEnv(definition.env, { ...base, env: workflowEnv }) };
  const defaults = isMapping(definition.defaults) && isMapping(definition.defaults.run) ? text(definition.defaults.run['working-directory']) : undefined;
  const job: CiTestJob = { file, job: id, cell, nodeSpecs: [], install: [], otherInstalls: [], steps: [], runsThrough: [], source: '', ...(input.via ? { via: input.via } : {}) };
  const checks: Array<{ step: CiStep; tests: boolean; missing?: string; afterInstall: boolean }> = [];
  let installed = false;
  // A global npm install is an entry of its own (the recipe runs those last, into the global prefix).
  const pushInstalls = (lines: string[], inDirectory: (line: string) => string): void => {
    const local = lines.filter((line) => !isGlobalInstall(line));
    if (local.some((line) => !/^cd\s/.test(line))) job.install.push(inDirectory(local.join(' && ')));
    job.install.push(...lines.filter(isGlobalInstall));
  };
  for (const step of flatSteps(Array.isArray(definition.steps) ? definition.steps : [])) {
    const stepEnv = { ...jobEnv, ...expandEnv(step.env, { ...base, env: jobEnv }) };
    const scope: ExpressionScope = { ...base, env: stepEnv };
    if (condition(step.if, scope) === false || step['continue-on-error'] === true) continue;
    const uses = text(step.uses)?.trim();
    const withs = isMapping(step.with) ? step.with : {};
    if (uses) {
      if (/^actions\/download-artifact@/.test(uses)) return `${file} › ${id} needs another job's artifacts`;
      const version = (key: string): string[] => (expand(text(withs[key]) ?? '', scope) ?? '').split('\n').map((line) => line.trim()).filter(Boolean);
      if (/^actions\/setup-node@/.test(uses)) job.nodeSpecs = version('node-version');
      // The first setup-python is the tests' (a later one combines coverage on another line).
      if (/^actions\/setup-python@/.test(uses)) job.python ??= version('python-version')[0];
      if (/^pnpm\/(?:action-)?setup@/.test(uses)) Object.assign(job, { pnpm: version('version')[0] ?? '', pnpmAction: uses.replace(/@.*$/, '') });
      continue;
    }
    const run = text(step.run);
    const shell = text(step.shell);
    if (run === undefined || (shell !== undefined && !/^(?:bash|sh)\b/.test(shell))) continue;
    const expanded = expand(run.trim(), scope);
    if (expanded === undefined) continue; // needs a secret, an input or a step's output
    let command = expanded;
    const cwd = relativeDirectory(expand(text(step['working-directory']) ?? defaults ?? '', scope));
    const stepName = expand(text(step.name) ?? '', scope) ?? '';
    const kind = classify(command, stepName);
    const inDirectory = (line: string): string => (cwd ? `cd ${cwd} && ${line}` : line);
    if (kind === 'install') {
      // Only the installs (and the directory changes between them): a download or an echo beside them is the runner's set-up.
      const installs = scriptLines(command).filter((line) => /^cd\s/.test(line) || isInstallLine(commandLines(line)[0] ?? ''));
      pushInstalls(installs, inDirectory);
      installed = true;
    } else if (kind === 'other-install') {
      job.otherInstalls.push(inDirectory(command));
      installed = true;
    } else if (kind === 'check') {
      // `npm install` then `npm test` in one step: the install runs where installs run (the build has the network).
      const lines = scriptLines(command);
      const leading = lines.findIndex((line) => !isInstallLine(commandLines(line)[0] ?? ''));
      if (leading > 0 && lines.length > 1) {
        pushInstalls(lines.slice(0, leading), inDirectory);
        installed = true;
        command = lines.slice(leading).join('\n');
      }
      const name = (stepName || command.split('\n')[0] || command).slice(0, 200);
      const stepsEnv = Object.fromEntries(Object.entries(stepEnv).filter(([key]) => !/^(?:FORCE_COLOR|TERM)$/.test(key)));
      const missing = commandLines(command).map(launcherOf).find((tool) => MISSING_TOOL.test(tool));
      checks.push({
        step: { name, command: command.includes('\n') ? `set -e\n${command}` : command, ...(cwd ? { cwd } : {}), ...(Object.keys(stepsEnv).length > 0 ? { env: stepsEnv } : {}) },
        tests: runsTests(command, stepName),
        afterInstall: installed,
        ...(missing ? { missing } : {}),
      });
    }
  }
  const kept = checks.some((check) => check.afterInstall) ? checks.filter((check) => check.afterInstall) : checks;
  const tests = kept.filter((check) => check.tests);
  if (tests.length === 0) return `${file} › ${id} runs no test step`;
  const missing = tests.find((check) => check.missing)?.missing;
  if (missing) return `${file} › ${id} runs its tests with ${missing}, which the sandbox does not have`;
  const usable = kept.filter((check) => !check.missing).slice(0, 50);
  job.steps = usable.map((check) => check.step);
  for (const step of job.steps) {
    if (/(?:^|\s)tox\b/m.test(step.command)) job.runsThrough.push(['tox.ini', 'tox.toml', 'pyproject.toml', 'setup.cfg'].find((name) => input.rootFiles.includes(name)) ?? 'tox');
    if (/(?:^|\s)nox\b/m.test(step.command)) job.runsThrough.push('noxfile.py');
    const make = /(?:^|\s)make\s+([\w:-]+)/m.exec(step.command)?.[1];
    if (make) job.runsThrough.push(`Makefile target ${make}`);
  }
  job.runsThrough = [...new Set(job.runsThrough)];
  const names = usable.filter((check) => check.tests).map((check) => `"${check.step.name}"`);
  const values = Object.entries(cell).filter(([, value]) => typeof value !== 'object');
  const cellText = values.length > 0 ? ` (${values.map(([key, value]) => `${key} ${String(value)}`).join(', ')})` : '';
  job.source = `${input.via ? `${input.via} › ` : ''}${file} › ${id} › ${names.slice(0, 2).join(', ')}${names.length > 2 ? ` and ${names.length - 2} more` : ''}${cellText}`.slice(0, 300);
  return job;
}

/** The test job of one job definition: the Linux cell the preference picks, or why none. */
function readJob(input: JobInput): CiTestJob | string {
  const { definition, file, id, preference } = input;
  const label = `${file} › ${id}`;
  const name = text(definition.name) ?? '';
  if (JOB_SKIPPED.test(`${id} ${name}`.replace(/[-_]/g, ' '))) return `${label} is a release, docs or upload job`;
  if (JOB_BROWSER.test(`${id} ${name}`)) return `${label} is a browser or end-to-end job`;
  if (condition(definition.if, { matrix: {}, env: {} }) === false) return `${label} does not run for a pull request (its if:)`;
  if (definition['continue-on-error'] === true) return `${label} may fail without failing the CI (continue-on-error)`;
  const strategy = isMapping(definition.strategy) ? definition.strategy : {};
  const cells = matrixCells(strategy.matrix);
  if (!cells) return `${label} has a matrix this reader cannot expand`;
  const linux = cells.filter((cell) => onLinux(definition['runs-on'], { matrix: cell, env: {}, ...(input.inputs ? { inputs: input.inputs } : {}) }));
  if (linux.length === 0) return `${label} runs on Windows or macOS only`;
  const readings = linux.map((cell) => jobInCell(input, cell));
  const jobs = readings.filter((reading): reading is CiTestJob => typeof reading !== 'string');
  if (jobs.length === 0) return readings[0] as string;
  const distance = (job: CiTestJob): number => {
    // Without setup-node (nvm in a run step), the cell's own node-version says the line.
    const named = job.nodeSpecs.length > 0 ? job.nodeSpecs : Object.entries(job.cell).filter(([key]) => /^node(?:[-_]?(?:js|version))?$/i.test(key)).map(([, value]) => String(value));
    const node = named.map(major).filter((value): value is number => value !== undefined);
    const nodeOff = preference.nodeMajor === undefined || node.length === 0 ? 0 : Math.min(...node.map((value) => Math.abs(value - (preference.nodeMajor ?? value))));
    const wanted = pythonMinor(preference.python);
    const minor = pythonMinor(job.python);
    // Nearest the sandbox's Python, the newer line on a tie.
    const pythonOff = wanted === undefined || job.python === undefined ? 0 : minor === undefined ? 99 : Math.abs(minor - wanted) * 2 + (minor < wanted ? 1 : 0);
    // A cell whose install steps include one the sandbox cannot run as written (clsx's coverage
    // cells, a `bun install` cell) gives way to one on the same line that needs none.
    return nodeOff * 100 + pythonOff + (job.otherInstalls.length > 0 ? 50 : 0);
  };
  return jobs.reduce((best, job) => (distance(job) < distance(best) ? job : best));
}

/**
 * A reusable workflow's inputs as a caller job gives them: its `with:` (expanded in the caller's
 * first matrix cell) over the called workflow's defaults; one that cannot be known is left out.
 */
function callInputs(target: Mapping, caller: Mapping): Record<string, unknown> {
  const inputs: Record<string, unknown> = {};
  const on = isMapping(target.on) && isMapping(target.on.workflow_call) ? target.on.workflow_call : {};
  for (const [key, spec] of Object.entries(isMapping(on.inputs) ? on.inputs : {})) {
    if (isMapping(spec) && spec.default !== undefined) inputs[key] = spec.default;
  }
  const strategy = isMapping(caller.strategy) ? caller.strategy : {};
  const scope: ExpressionScope = { matrix: matrixCells(strategy.matrix)?.[0] ?? {}, env: {} };
  for (const [key, value] of Object.entries(isMapping(caller.with) ? caller.with : {})) {
    const expanded = typeof value === 'string' ? expand(value, scope) : value;
    if (expanded === undefined) delete inputs[key];
    else inputs[key] = expanded;
  }
  return inputs;
}

/** The repository's CI test job (see the header), or why there is none to follow. */
export function readCiTestJob(files: Readonly<Record<string, string | undefined>>, rootFiles: readonly string[], preference: CiPreference = {}): CiReading {
  const parsed = (path: string): Mapping | undefined => {
    try {
      const value: unknown = parseYaml(files[path] ?? '');
      return isMapping(value) && isMapping(value.jobs) ? value : undefined;
    } catch {
      return undefined;
    }
  };
  const found: Reading[] = [];
  const reasons: string[] = [];
  let order = 0;
  const consider = (input: Omit<JobInput, 'rootFiles' | 'preference'>): void => {
    const reading = readJob({ ...input, rootFiles, preference });
    order += 1;
    if (typeof reading === 'string') {
      reasons.push(reading);
      return;
    }
    const words = `${input.id} ${text(input.definition.name) ?? ''}`;
    const fileTier = FILE_PREFERRED.test(input.file.slice(WORKFLOW_DIR.length + 1)) ? 0 : 100;
    // A job with service containers (a database) or its own container image runs where the sandbox cannot follow.
    const elsewhere = input.definition.services !== undefined || input.definition.container !== undefined ? 1500 : 0;
    const rank = (JOB_TEST.test(input.id) ? 0 : JOB_PREFERRED.test(input.id) ? 500 : JOB_LATER.test(words) ? 2000 : 1000) + elsewhere + fileTier + order;
    found.push({ job: reading, rank });
  };
  const paths = workflowFiles(Object.keys(files));
  for (const file of paths) {
    const workflow = parsed(file);
    if (!workflow) continue;
    if (!runsOnChanges(workflow.on)) continue;
    // A release workflow that pull requests never run: its test job gates publishing, the one pull requests meet is elsewhere.
    if (!onPullRequests(workflow.on) && JOB_SKIPPED.test(file.slice(WORKFLOW_DIR.length + 1).replace(/[-_.]/g, ' '))) {
      reasons.push(`${file} is a release, deploy or docs workflow`);
      continue;
    }
    for (const [id, definition] of Object.entries(workflow.jobs as Mapping)) {
      if (!isMapping(definition)) continue;
      const uses = text(definition.uses)?.trim();
      if (uses === undefined) {
        consider({ file, id, definition, workflowEnv: workflow.env });
        continue;
      }
      const called = uses.replace(/^\.\//, '');
      const target = isWorkflowFile(called) ? parsed(called) : undefined;
      if (!uses.startsWith('./') || !target) {
        reasons.push(`${file} › ${id} calls ${uses}, which this reader does not follow`);
        continue;
      }
      if (condition(definition.if, { matrix: {}, env: {} }) === false) continue;
      const inputs = callInputs(target, definition);
      for (const [innerId, inner] of Object.entries(target.jobs as Mapping)) {
        if (isMapping(inner) && inner.uses === undefined) consider({ file: called, via: `${file} › ${id}`, id: innerId, definition: inner, workflowEnv: target.env, inputs });
      }
    }
  }
  const best = found.sort((a, b) => a.rank - b.rank)[0];
  if (best) return { job: best.job };
  if (paths.length === 0) return { reason: 'no workflow in .github/workflows' };
  // Why the jobs that test were not followed says more than which jobs do not test.
  const telling = [...reasons.filter((reason) => !/runs no test step|release, d/.test(reason)), ...reasons.filter((reason) => /runs no test step|release, d/.test(reason))];
  return { reason: telling.length > 0 ? `no test job to follow: ${telling.slice(0, 3).join('; ')}` : 'no workflow runs for pushes or pull requests' };
}
