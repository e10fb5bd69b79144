import picomatch from 'picomatch';
import { FILE_MARKER, REPORT_FILE, RESULT_MARKER, shellQuote, testCommand, type TestTarget } from './runners';
import { tapCoverageOff } from './node-tap';
import { announceUvuDir, uvuArguments } from './uvu';
import { scriptEnvironmentShell, type ScriptPlace, type ScriptToolchain } from './script-env';
import { nodeTestReporterAccepted, withSideChannel, type SideChannelOptions } from './side-channel';
import type { PlannedStep, RunnerInvocation, ShellWord, TestPlan } from './test-command';
import type { TestRunner } from './types';

/*
 * Shell commands for one suite run. With an environment recipe the repository's own test
 * command is the source: the runner step keeps its own words (wrappers, flags, config) and only
 * gets a machine reporter added and, for a selection, its positional paths replaced by the
 * selected files. Without a recipe (test doubles) the detected runner's default command runs.
 * Each step of the repository's scripts runs with the environment its package manager would
 * have given it (`script-env.ts`).
 */

/** A step of the chain around the runner, run as written: `text` names it (and its failing case), `script` is its shell. */
export interface SuiteStep {
  text: string;
  script: string;
}

/** What the steps' script environment needs besides the plan: the recipe's toolchain. */
export interface PlanContext {
  python?: string;
  toolchain?: ScriptToolchain;
}

export interface SuitePlan {
  runner: TestRunner | 'unknown' | 'custom';
  /** The runner step runs as written and its results come through the side channel (`side-channel.ts`). */
  sideChannel?: boolean;
  /** What the user sees: the repository's command and what of it ran. */
  command: string;
  /** The runner step's shell. */
  script: string;
  /** The runner step as written: its identity in the whole command and in a selection of it (`TestStepOutcome.key`). */
  stepKey?: string;
  /** Steps of the repository's chain around the runner step, run as written (whole command only). */
  before: SuiteStep[];
  after: SuiteStep[];
  /** The same runner on some tests (reruns); undefined when it cannot be narrowed. */
  narrow?: (targets: TestTarget[]) => SuitePlan;
  /** A workspace member's plan runs in this directory (repo-relative); printed paths are relative to it. */
  cwd?: string;
}

/** What a member's steps were named by before they ran in a script environment: their failing cases keep these ids. */
const PATH_PREFIX = 'export PATH="$PWD/node_modules/.bin:$PATH"; ';

const ROOT: ScriptPlace = { dir: '', workspaces: false };

/** The shell that gives a step of `plan` its script environment (just PATH for a step outside any script). */
function environmentOf(plan: TestPlan, origin: PlannedStep['origin'], context: PlanContext, place: ScriptPlace): string {
  return scriptEnvironmentShell(origin, plan.packageEnv, context.toolchain ?? {}, place);
}

/** Where a step after a `cd` of the chain runs (it failing to get there is its failure, exit 1). */
function cdOf(step: PlannedStep): string {
  return step.cwd ? `cd ${shellQuote(step.cwd)} || exit 1; ` : '';
}

/** A step's name, its failing case's id: as written, with the chain's `cd` in front when there was one. */
function nameOf(step: PlannedStep): string {
  return step.cwd ? `cd ${step.cwd} && ${step.text}` : step.text;
}

/** A step as written, in its script environment, with the side channel around it. */
function sideChannelStep(plan: TestPlan, step: PlannedStep, context: PlanContext, place: ScriptPlace): string {
  return withSideChannel(`${cdOf(step)}${environmentOf(plan, step.origin, context, place)}${step.text}`, sideChannelOptions(context));
}

function sideChannelOptions(context: PlanContext): SideChannelOptions {
  return context.toolchain?.node ? { node: context.toolchain.node } : {};
}

function suiteSteps(plan: TestPlan, steps: PlannedStep[], context: PlanContext, place: ScriptPlace): SuiteStep[] {
  return steps.map((step) => ({ text: nameOf(step), script: sideChannelStep(plan, step, context, place) }));
}

/**
 * Does the side channel read this runner step's results, so it can run as written? jest, vitest,
 * mocha and pytest always; node:test where the Node version takes reporters in NODE_OPTIONS. tape,
 * uvu, ava and node-tap are read from their own output (ava and node-tap with their TAP flag);
 * a formatter pipe (`tape | tap-spec`) is left out to read the raw TAP; a configured Python
 * interpreter replaces `python3 -m pytest`.
 */
function sideChannelCovers(invocation: RunnerInvocation, step: PlannedStep, context: PlanContext): boolean {
  if (invocation.formatter) return false;
  switch (invocation.runner) {
    case 'jest':
    case 'vitest':
    case 'mocha':
    // ava's TAP through the preload's copy of its stdout: `xo && ava && tsd` runs as written, no `--tap` spliced in (camelcase).
    case 'ava':
      return true;
    case 'pytest':
      return !(context.python && words(invocation.head) === 'python3 -m pytest');
    case 'node-test':
      // A step naming its own reporter is read through its TAP, as before (side-channel.ts).
      return nodeTestReporterAccepted(context.toolchain?.node) && !/--test-reporter/.test(step.text);
    default:
      return false;
  }
}

function words(list: ShellWord[]): string {
  return list.map((word) => word.raw).join(' ');
}

function escapeRegex(text: string): string {
  return `^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
}

const COVERAGE_WRAPPERS = new Set(['c8', 'nyc']);
/** c8's and nyc's options whose value is the next word. */
const COVERAGE_VALUE_OPTIONS = new Set(['-r', '--reporter', '-x', '--exclude', '-n', '--include', '-e', '--extension', '-o', '--report-dir', '--reports-dir', '--temp-directory', '--lines', '--branches', '--functions', '--statements', '--src', '-i', '--require']);

/**
 * The head without coverage wrappers (`c8 --100`, `nyc --check-coverage`): a coverage threshold
 * holds for the whole suite, so on a selection (or one file per process) it fails green tests.
 * The whole command, and the full run before a PR, keep the wrapper as written.
 */
function withoutCoverage(head: ShellWord[]): ShellWord[] {
  const kept: ShellWord[] = [];
  for (let index = 0; index < head.length; index++) {
    const word = head[index];
    if (!word || !COVERAGE_WRAPPERS.has(word.value.split('/').pop() ?? word.value)) {
      if (word) kept.push(word);
      continue;
    }
    if (kept.at(-1)?.value === 'npx') kept.pop();
    while ((head[index + 1]?.value ?? '').startsWith('-')) {
      index++;
      const option = head[index]?.value ?? '';
      if (!option.includes('=') && COVERAGE_VALUE_OPTIONS.has(option)) index++;
    }
  }
  return kept;
}

/** The runner step with its reporter; `targets` replace the script's own paths; `environment` is its script environment's shell. */
function invocationShell(invocation: RunnerInvocation, targets: TestTarget[] | undefined, environment: string, python?: string): { script: string; shown: string } {
  // jest takes its positional arguments as regular expressions: a route group's `(app)` or a `[slug]` must match itself.
  const literal = (file: string) => (invocation.runner === 'jest' ? file.replace(/[*+?^${}()|[\]\\]/g, '\\$&') : file);
  const files = targets ? [...new Set(targets.map((target) => literal(target.file)))].map(shellQuote).join(' ') : words(invocation.paths);
  const names = (targets ?? []).flatMap((target) => target.names ?? []);
  const pattern = names.length > 0 ? shellQuote(names.map(escapeRegex).join('|')) : undefined;
  const head = words(targets ? withoutCoverage(invocation.head) : invocation.head);
  const flags = words(invocation.flags);
  const join = (...parts: Array<string | undefined>) => parts.filter((part) => part && part.length > 0).join(' ');
  const withReport = (shown: string) => ({
    script: `rm -f ${REPORT_FILE}; ${environment}${shown}; status=$?; echo ${RESULT_MARKER}; cat ${REPORT_FILE} 2>/dev/null; exit $status`,
    shown,
  });
  switch (invocation.runner) {
    case 'vitest':
      return withReport(join(head, flags, `--reporter=json --outputFile=${REPORT_FILE}`, pattern && `-t ${pattern}`, files));
    case 'jest':
      return withReport(join(head, flags, `--json --outputFile=${REPORT_FILE}`, pattern && `-t ${pattern}`, files));
    case 'mocha':
      return withReport(join(head, flags, `--reporter json --reporter-option output=${REPORT_FILE}`, pattern && `--grep ${pattern}`, files));
    case 'tape':
      return { script: `${environment}${join(head, flags, files)}`, shown: join(head, flags, files) };
    case 'ava':
      return { script: `${environment}${join(head, flags, '--tap', files)}`, shown: join(head, flags, '--tap', files) };
    case 'tap': {
      // A selection covers part of the code: coverage off (node-tap.ts); the whole command keeps it.
      const shown = join(head, flags, '--reporter=tap', targets && tapCoverageOff(head), files);
      return { script: `${environment}${shown}`, shown };
    }
    case 'uvu': {
      // `uvu [dir] [pattern]`: a selection is the script's directory and a pattern naming the files.
      const dir = invocation.paths[0]?.value;
      const shown = join(head, flags, targets ? uvuArguments(dir, targets.map((target) => target.file)) : words(invocation.paths));
      return { script: `${environment}${announceUvuDir(dir)}; ${shown}`, shown };
    }
    case 'pytest': {
      const ids = targets ? (targets.flatMap((target) => target.names ?? [target.file])).map(shellQuote).join(' ') : files;
      const shown = join(python && head === 'python3 -m pytest' ? `${shellQuote(python)} -m pytest` : head, flags, '-q -rA --tb=short -p no:cacheprovider', ids);
      return { script: `${environment}${shown}`, shown };
    }
    case 'node-test': {
      const base = join(head, '--test-reporter=tap', flags, pattern && `--test-name-pattern=${pattern}`);
      if (!targets) return { script: `${environment}${join(base, files)}`, shown: join(base, files) };
      // One process per file: node's TAP names the file only for failures (see runners.ts).
      const loop = `status=0; for file in ${files}; do echo "# ${FILE_MARKER} $file"; ${base} "$file" || status=1; done; exit $status`;
      return { script: `${environment}${loop}`, shown: join(base, files) };
    }
  }
}

/** The whole repository command: its chain as written around the instrumented runner step. */
export function wholeCommandPlan(plan: TestPlan, context: PlanContext = {}, place: ScriptPlace = ROOT): SuitePlan {
  const invocation = plan.invocation;
  const written = plan.step;
  if (!written) {
    // A line Dockhand does not split (`||`, `$(…)`, a redirect): whole, in a subshell, still observed.
    return { runner: 'unknown', sideChannel: true, command: plan.command, stepKey: plan.command, script: withSideChannel(plan.command, sideChannelOptions(context), true), before: [], after: [] };
  }
  if (!invocation || sideChannelCovers(invocation, written, context)) {
    const chain = [...plan.before, written, ...plan.after].map(nameOf).join(' && ');
    return {
      runner: invocation?.runner ?? 'unknown',
      sideChannel: true,
      command: chain === plan.command ? plan.command : `${plan.command} → ${chain}`,
      stepKey: nameOf(written),
      script: sideChannelStep(plan, written, context, place),
      before: suiteSteps(plan, plan.before, context, place),
      after: suiteSteps(plan, plan.after, context, place),
      ...(invocation ? { narrow: (targets: TestTarget[]) => selectedPlan(plan, targets, context, place) } : {}),
    };
  }
  const step = invocationShell(invocation, undefined, environmentOf(plan, invocation.origin, context, place), context.python);
  const chain = [...plan.before.map((before) => before.text), step.shown, ...plan.after.map((after) => after.text)].join(' && ');
  const note = invocation.formatter ? `; report read without the formatter \`${invocation.formatter}\`` : '';
  const command = chain === plan.command ? plan.command : `${plan.command} → ${chain}${note}`;
  return {
    runner: invocation.runner,
    command,
    stepKey: nameOf(written),
    script: step.script,
    before: suiteSteps(plan, plan.before, context, place),
    after: suiteSteps(plan, plan.after, context, place),
    narrow: (targets) => selectedPlan(plan, targets, context, place),
  };
}

/** The runner step alone on `targets` (a selection or a rerun), with the same script environment. */
export function selectedPlan(plan: TestPlan, targets: TestTarget[], context: PlanContext = {}, place: ScriptPlace = ROOT): SuitePlan {
  const invocation = plan.invocation;
  if (!invocation) throw new Error('a test command without a known runner cannot run a selection');
  const step = invocationShell(invocation, targets, environmentOf(plan, invocation.origin, context, place), context.python);
  return {
    runner: invocation.runner,
    command: step.shown,
    ...(plan.step ? { stepKey: nameOf(plan.step) } : {}),
    script: step.script,
    before: [],
    after: [],
    narrow: (next) => selectedPlan(plan, next, context, place),
  };
}

/**
 * The selected files this command's runner can take: its language's files, inside the paths the
 * script points it at (a script on `dist/` cannot run sources). A reason when none are left.
 */
export function selectableFiles(plan: TestPlan, tests: string[]): { files: string[] } | { reason: string } {
  const invocation = plan.invocation;
  if (!invocation) return { reason: `the runner of \`${plan.command}\` is not one Dockhand can pass files to` };
  const python = invocation.runner === 'pytest';
  let files = tests.filter((test) => test.endsWith('.py') === python);
  const paths = invocation.paths.map((word) => word.value.replace(/^\.\//, '').replace(/\/$/, ''));
  if (paths.length > 0) {
    const matchers = paths.map((path) => (/[*?{[]/.test(path) ? picomatch(path, { dot: true }) : (file: string) => file === path || file.startsWith(`${path}/`)));
    files = files.filter((file) => matchers.some((matches) => matches(file)));
  }
  if (files.length === 0) return { reason: `none of the selected test files is among what \`${plan.command}\` runs (${invocation.runner}${paths.length > 0 ? ` on ${paths.join(' ')}` : ''})` };
  return { files };
}

/** Without a recipe: the detected runner's default command (what the engine always did). */
export function detectedPlan(runner: TestRunner, targets: TestTarget[] | undefined, python?: string): SuitePlan {
  const options = python ? { python } : {};
  return {
    runner,
    command: testCommand(runner, targets, options),
    script: testCommand(runner, targets, options),
    before: [],
    after: [],
    narrow: (next) => detectedPlan(runner, next, python),
  };
}

/** Targets of the repository (`packages/a/test/x.js`) as a member sees them (`test/x.js`). */
function inside(dir: string, targets: TestTarget[]): TestTarget[] {
  return targets.filter((target) => target.file.startsWith(`${dir}/`)).map((target) => ({ ...target, file: target.file.slice(dir.length + 1) }));
}

/**
 * A member's plan run in its directory, as the package manager runs a workspace script: the
 * member's and the root's node_modules/.bin on PATH (npm and yarn hoist binaries to the root);
 * `plan` was made for the member's place, so its steps' environment names the member's package.
 */
function inMember(dir: string, plan: SuitePlan): SuitePlan {
  const cd = `export PATH="$PWD/node_modules/.bin:$PATH"; cd ${shellQuote(dir)} || exit 127; `;
  // The step's name (its failing case's id) is the one it always had, so stored baselines keep matching.
  const step = (inner: SuiteStep): SuiteStep => ({ text: `${cd}${PATH_PREFIX}${inner.text}`, script: `${cd}${inner.script}` });
  const narrow = plan.narrow;
  return {
    runner: plan.runner,
    command: `${dir}: ${plan.command}`,
    ...(plan.stepKey ? { stepKey: `${dir}: ${plan.stepKey}` } : {}),
    script: `${cd}${plan.script}`,
    before: plan.before.map(step),
    after: plan.after.map(step),
    cwd: dir,
    ...(narrow ? { narrow: (targets: TestTarget[]) => inMember(dir, narrow(inside(dir, targets))) } : {}),
  };
}

/** The whole command of a workspace plan: every member's script in its directory, the root's own steps around them. */
export function wholeWorkspacePlans(plan: TestPlan, context: PlanContext = {}): SuitePlan[] {
  const members = plan.workspaces?.members ?? [];
  const plans = members.map((member) => inMember(member.dir, wholeCommandPlan(member.plan, context, { dir: member.dir, workspaces: true })));
  const first = plans[0];
  const last = plans[plans.length - 1];
  if (first) first.before = [...suiteSteps(plan, plan.before, context, ROOT), ...first.before];
  if (last) last.after = [...last.after, ...suiteSteps(plan, plan.after, context, ROOT)];
  return plans;
}

/**
 * A selection over a workspace plan: each member that holds selected test files runs its runner
 * on them (its whole script when its runner cannot take files). A reason when no member does.
 */
export function selectedWorkspacePlans(plan: TestPlan, tests: string[], context: PlanContext = {}): { plans: SuitePlan[]; left: number } | { reason: string } {
  const plans: SuitePlan[] = [];
  let taken = 0;
  for (const member of plan.workspaces?.members ?? []) {
    const own = inside(member.dir, tests.map((file) => ({ file }))).map((target) => target.file);
    if (own.length === 0) continue;
    const selectable = selectableFiles(member.plan, own);
    if ('reason' in selectable) {
      if (member.plan.invocation) continue;
      plans.push(inMember(member.dir, wholeCommandPlan(member.plan, context, { dir: member.dir, workspaces: true })));
      taken += own.length;
      continue;
    }
    plans.push(inMember(member.dir, selectedPlan(member.plan, selectable.files.map((file) => ({ file })), context, { dir: member.dir, workspaces: true })));
    taken += selectable.files.length;
  }
  if (plans.length === 0) return { reason: `none of the selected test files is in a workspace package that \`${plan.command}\` runs` };
  return { plans, left: tests.length - taken };
}

/** A step of the recipe's `test.steps` (the CI's steps): its name, command, directory and environment. */
export interface RecipeStep {
  name: string;
  command: string;
  cwd?: string;
  env?: Record<string, string>;
}

/**
 * A plan of one recipe step run where and how its CI runs it: in its `cwd` (the root's
 * node_modules/.bin on PATH too, as for a workspace member), with its `env` exported first.
 * Its name leads what the user sees; a failing step's case keeps the step's own text.
 */
export function inRecipeStep(step: RecipeStep, plan: SuitePlan): SuitePlan {
  const cwd = step.cwd?.replace(/^\.\/|\/$/g, '');
  const cd = cwd && cwd !== '.' ? `export PATH="$PWD/node_modules/.bin:$PATH"; cd ${shellQuote(cwd)} || exit 1; ` : '';
  const env = Object.entries(step.env ?? {}).filter(([key]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(key)).map(([key, value]) => `export ${key}=${shellQuote(value)}; `).join('');
  const prefix = `${cd}${env}`;
  const wrap = (inner: SuiteStep): SuiteStep => ({ text: inner.text, script: `${prefix}${inner.script}` });
  const narrow = plan.narrow;
  return {
    ...plan,
    command: step.name === step.command ? plan.command : `${step.name}: ${plan.command}`,
    ...(plan.stepKey ? { stepKey: step.name === step.command ? plan.stepKey : `${step.name}: ${plan.stepKey}` } : {}),
    script: `${prefix}${plan.script}`,
    before: plan.before.map(wrap),
    after: plan.after.map(wrap),
    ...(cwd && cwd !== '.' ? { cwd } : {}),
    ...(narrow ? { narrow: (targets: TestTarget[]) => inRecipeStep(step, narrow(cwd && cwd !== '.' ? inside(cwd, targets) : targets)) } : {}),
  };
}

/** A configured command run as written (checks.preMerge): its exit status decides. */
export function customPlan(command: string): SuitePlan {
  return { runner: 'custom', command, script: command, before: [], after: [] };
}
