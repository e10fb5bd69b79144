import { z } from 'zod';
import { packageEnvironment, type ScriptOrigin } from './script-env';
import type { TestRunner } from './types';

/*
 * What the repository's own test command runs. `npm test` is a name for a script; the script is a
 * shell line that may chain steps (`npm run build && jest`), pipe the runner into a formatter
 * (`tape test/*.js | tap-spec`) or call other scripts (`npm run test:unit`). This module follows
 * that chain as far as it can see (scripts of the root package.json, plain words, `&&`, `;` and
 * `|`) and finds the one step that invokes a runner it knows, with that step's own words kept.
 *
 * It does not interpret the shell: a subshell, `$(…)`, `||`, a redirect or a script file
 * (`./test.sh`, `make test`) leaves the runner 'unknown', and then the whole command runs as
 * written and only its exit status decides.
 *
 * A step that runs one script in every workspace package (`npm test --workspaces`, `pnpm -r
 * test`, `yarn workspaces run test`, `yarn workspaces foreach -A run test`) is followed into each
 * member package given (`planTestCommand`'s `members`): each member's script is planned in its
 * own directory, so its runner's report counts its tests and a selection goes to the members
 * that hold the selected files.
 */

export interface ShellWord {
  /** As written, quotes included (so globs stay globs when the word is reused). */
  raw: string;
  /** With quotes removed. */
  value: string;
}

type Token = { word: ShellWord } | { operator: '&&' | '||' | ';' | '|' | '&' | 'other' };

/** Splits a shell line into words and operators; undefined for anything it does not model. */
export function tokenize(line: string): Token[] | undefined {
  const tokens: Token[] = [];
  let index = 0;
  while (index < line.length) {
    const char = line[index] ?? '';
    if (/\s/.test(char)) {
      index++;
      continue;
    }
    const two = line.slice(index, index + 2);
    if (two === '&&' || two === '||') {
      tokens.push({ operator: two });
      index += 2;
      continue;
    }
    if (char === ';' || char === '|' || char === '&') {
      tokens.push({ operator: char });
      index++;
      continue;
    }
    if ('<>()`'.includes(char) || two === '$(') return undefined;
    let raw = '';
    let value = '';
    while (index < line.length) {
      const c = line[index] ?? '';
      if (/\s/.test(c) || ';|&<>()`'.includes(c)) break;
      if (c === "'" || c === '"') {
        const end = line.indexOf(c, index + 1);
        if (end < 0) return undefined;
        const inner = line.slice(index + 1, end);
        if (c === '"' && /[$`\\]/.test(inner)) return undefined;
        raw += line.slice(index, end + 1);
        value += inner;
        index = end + 1;
        continue;
      }
      if (c === '\\') {
        raw += line.slice(index, index + 2);
        value += line[index + 1] ?? '';
        index += 2;
        continue;
      }
      if (c === '$') return undefined;
      raw += c;
      value += c;
      index++;
    }
    tokens.push({ word: { raw, value } });
  }
  return tokens;
}

/** One command of a chain: its pipe segments, each a list of words. */
export interface ChainStep {
  segments: ShellWord[][];
  /** The package-manager script it is written in (undefined: the command itself, outside any script). */
  origin?: ScriptOrigin;
  /** The directory an earlier `cd <dir>` of the chain moved to (repo-relative): the step runs there, as written. */
  cwd?: string;
}

export function stepText(step: ChainStep): string {
  return step.segments.map((segment) => segment.map((word) => word.raw).join(' ')).join(' | ');
}

/** `a && b; c` → three steps; undefined for `||`, `&` or an empty step (not modelled). */
export function splitChain(line: string): ChainStep[] | undefined {
  const tokens = tokenize(line);
  if (!tokens) return undefined;
  const steps: ChainStep[] = [];
  let segments: ShellWord[][] = [[]];
  for (const token of tokens) {
    if ('word' in token) {
      segments[segments.length - 1]?.push(token.word);
      continue;
    }
    if (token.operator === '|') {
      segments.push([]);
      continue;
    }
    if (token.operator !== '&&' && token.operator !== ';') return undefined;
    if (segments.some((segment) => segment.length === 0)) return undefined;
    steps.push({ segments });
    segments = [[]];
  }
  if (segments.some((segment) => segment.length === 0)) return steps.length > 0 && segments.length === 1 ? steps : undefined;
  steps.push({ segments });
  return steps;
}

const PackageScripts = z.object({ scripts: z.record(z.string(), z.string()).optional() });

export function packageScripts(packageJson: string | undefined): Record<string, string> {
  if (packageJson === undefined) return {};
  try {
    const parsed = PackageScripts.safeParse(JSON.parse(packageJson));
    return parsed.success ? (parsed.data.scripts ?? {}) : {};
  } catch {
    return {};
  }
}

/**
 * The script a step names (`npm test`, `npm run x`, `pnpm x`, `yarn x`), with the words after
 * it; undefined when the step is not a package-manager script call.
 */
function scriptCall(words: ShellWord[], scripts: Record<string, string>): { name: string; extra: ShellWord[]; manager: ScriptOrigin['manager']; command: ScriptOrigin['command']; ignoreScripts: boolean } | undefined {
  const [manager, first, second, ...rest] = words.map((word) => word.value);
  if (manager !== 'npm' && manager !== 'pnpm' && manager !== 'yarn') return undefined;
  // Workspace runs (`npm test --workspaces`, `pnpm -r test`) run other packages' scripts: not followed.
  if (words.some((word) => /^(--workspaces?|-ws|-w|--filter|-F|-r|--recursive|--include-workspace-root)(=.*)?$/.test(word.value))) return undefined;
  const flags = (from: number) => words.slice(from).filter((word) => !['--silent', '-s', '--if-present'].includes(word.value));
  let name: string | undefined;
  let from = 2;
  let command: ScriptOrigin['command'] = 'run-script';
  if (first === 'test' || first === 't' || first === 'tst') {
    name = 'test';
    command = 'test';
  } else if ((first === 'run' || first === 'run-script') && second) {
    name = second;
    from = 3;
  } else if (manager !== 'npm' && first && first in scripts) name = first;
  if (name === undefined || !(name in scripts)) return undefined;
  void rest;
  const own = flags(from);
  const dash = own.findIndex((word) => word.value === '--');
  // `npm test --ignore-scripts` still runs the test script, not its pre and post scripts (npm's docs of ignore-scripts).
  const ignoreScripts = manager === 'npm' && (dash < 0 ? own : own.slice(0, dash)).some((word) => /^--ignore-scripts(?:=true)?$/.test(word.value));
  return { name, extra: scriptArguments(manager, own), manager, command, ignoreScripts };
}

/** npm's own options that take the next word as their value (`npm test --loglevel warn`). */
const NPM_VALUE_OPTIONS = new Set(['--loglevel', '--prefix', '--userconfig', '--cache', '--registry', '--script-shell', '--workspace', '-w', '-C']);

/**
 * The words after the script's name that reach the script. npm parses options before `--` as its
 * own configuration (`npm test --ignore-scripts` sets npm's ignore-scripts; census: tap was given
 * `--ignore-scripts` and refused it) and passes the positional words and everything after `--`.
 * pnpm, yarn classic and berry pass the words as they are (a leading `--` dropped).
 */
export function scriptArguments(manager: ScriptOrigin['manager'], words: ShellWord[]): ShellWord[] {
  if (manager !== 'npm') return words[0]?.value === '--' ? words.slice(1) : words;
  const dash = words.findIndex((word) => word.value === '--');
  const before = dash < 0 ? words : words.slice(0, dash);
  const positional: ShellWord[] = [];
  for (let index = 0; index < before.length; index++) {
    const word = before[index];
    if (!word) continue;
    if (!word.value.startsWith('-')) positional.push(word);
    else if (!word.value.includes('=') && NPM_VALUE_OPTIONS.has(word.value)) index++;
  }
  return [...positional, ...(dash < 0 ? [] : words.slice(dash + 1))];
}

/** The steps of a script's own text are its (a step of a script it calls keeps that script's origin). */
function written(steps: ChainStep[], origin: ScriptOrigin): ChainStep[] {
  for (const step of steps) step.origin ??= origin;
  return steps;
}

export interface ResolvedChain {
  steps: ChainStep[];
  /** Each script expanded, outermost first (`test: tape test/*.js | tap-spec`). */
  expanded: string[];
}

/** The command with its package-manager scripts expanded (depth ≤ 5); undefined if not modelled. */
export function resolveChain(command: string, scripts: Record<string, string>, depth = 0): ResolvedChain | undefined {
  const steps = splitChain(command);
  if (!steps || depth > 5) return undefined;
  const out: ChainStep[] = [];
  const expanded: string[] = [];
  let cwd: string | undefined;
  for (const step of steps) {
    // `cd packages/x && pnpm test`: the later steps run in that directory, as written (the root's scripts are not theirs).
    const words = step.segments.length === 1 ? (step.segments[0] ?? []) : [];
    if (words.length === 2 && words[0]?.value === 'cd' && words[1] && !/^[-~/]/.test(words[1].value)) {
      cwd = [cwd, words[1].value.replace(/^\.\/|\/$/g, '')].filter(Boolean).join('/');
      continue;
    }
    if (cwd !== undefined) {
      out.push({ ...step, cwd });
      continue;
    }
    const call = step.segments.length === 1 ? scriptCall(step.segments[0] ?? [], scripts) : undefined;
    if (!call) {
      out.push(step);
      continue;
    }
    const pre = scripts[`pre${call.name}`];
    const script = scripts[call.name] ?? '';
    const origin = (event: string, text: string): ScriptOrigin => ({ manager: call.manager, event, script: text, command: call.command });
    expanded.push(`${call.name}: ${script}`);
    // npm runs pre<name> first; pnpm (since v7) and yarn berry do not…
    if (pre !== undefined && call.manager === 'npm' && !call.ignoreScripts) {
      const inner = resolveChain(pre, scripts, depth + 1);
      if (!inner) return undefined;
      out.push(...written(inner.steps, origin(`pre${call.name}`, pre)));
      expanded.push(...inner.expanded);
    }
    const inner = resolveChain(script, scripts, depth + 1);
    if (!inner) return undefined;
    const last = inner.steps[inner.steps.length - 1];
    const lastSegment = last?.segments[last.segments.length - 1];
    if (call.extra.length > 0 && lastSegment) lastSegment.push(...call.extra);
    // npm appends the arguments to the script it runs, and shows them in npm_lifecycle_script.
    const withArguments = [script, ...call.extra.map((word) => word.raw)].join(' ');
    out.push(...written(inner.steps, origin(call.name, withArguments)));
    expanded.push(...inner.expanded);
    // …and post<name> after it (npm/ini's `posttest: npm run lint`).
    const post = scripts[`post${call.name}`];
    if (post !== undefined && call.manager === 'npm' && !call.ignoreScripts) {
      const after = resolveChain(post, scripts, depth + 1);
      if (!after) return undefined;
      out.push(...written(after.steps, origin(`post${call.name}`, post)));
      expanded.push(...after.expanded);
    }
  }
  return { steps: out, expanded };
}

/** A step that runs a known runner, split into the parts a selection or a reporter changes. */
export interface RunnerInvocation {
  runner: TestRunner;
  /** Words up to and including the runner (wrappers, env assignments, `node --test`, `vitest run`). */
  head: ShellWord[];
  /** The step's own options, kept (reporter options the engine sets itself are left out). */
  flags: ShellWord[];
  /** Positional paths and globs: what the script points the runner at. */
  paths: ShellWord[];
  /** A formatter the runner's output was piped into (`tap-spec`), dropped to read the raw report. */
  formatter?: string;
  /** The script the runner step is written in. */
  origin?: ScriptOrigin;
}

const WRAPPERS = new Set(['npx', 'cross-env', 'env', 'nyc', 'c8', 'dotenv', 'exec']);
const BINARIES: Record<string, TestRunner> = {
  vitest: 'vitest', jest: 'jest', mocha: 'mocha', _mocha: 'mocha', tape: 'tape', ava: 'ava', uvu: 'uvu', tap: 'tap', pytest: 'pytest', 'py.test': 'pytest',
};

/** Options whose value is the next word, per runner (so `--require test/setup.js` is not a path). */
const VALUE_OPTIONS: Record<TestRunner, string[]> = {
  mocha: ['-r', '--require', '-R', '--reporter', '-O', '--reporter-option', '--reporter-options', '-t', '--timeout', '-u', '--ui', '--config', '--file', '--ignore', '--exclude', '--extension', '-g', '--grep', '-f', '--fgrep', '-s', '--slow', '--spec', '--package', '-j', '--jobs'],
  jest: ['-c', '--config', '-t', '--testNamePattern', '--testPathPattern', '--testPathIgnorePatterns', '--reporters', '--coverageDirectory', '-w', '--maxWorkers', '--testTimeout', '--rootDir', '--roots', '--selectProjects', '--outputFile', '--shard', '--setupFiles', '--setupFilesAfterEnv', '--testEnvironment'],
  vitest: ['-c', '--config', '-r', '--root', '--dir', '--reporter', '--outputFile', '--project', '--environment', '--pool', '-t', '--testNamePattern', '--shard', '--mode', '--exclude'],
  'node-test': ['-r', '--require', '--import', '--loader', '--experimental-loader', '--test-reporter', '--test-reporter-destination', '--test-name-pattern', '--test-concurrency', '--test-timeout', '--env-file'],
  tape: ['-r', '--require', '-i', '--ignore'],
  ava: ['-m', '--match', '-T', '--timeout', '-c', '--concurrency', '--config', '--node-arguments'],
  uvu: ['-r', '--require', '-i', '--ignore', '-C', '--cwd'],
  // node-tap 16 (yargs-like) and 18 (jackspeak); --coverage-report and the thresholds take values in both.
  tap: ['-R', '--reporter', '-r', '--reporter-arg', '-j', '--jobs', '-t', '--timeout', '-g', '--grep', '-o', '--output-file', '-d', '--output-dir', '--node-arg', '--nyc-arg', '--test-arg', '--test-regex', '--test-ignore', '--coverage-report', '--branches', '--functions', '--lines', '--statements', '--before', '--after', '--plugin', '--include', '--exclude', '--save'],
  pytest: ['-k', '-m', '-p', '-c', '--rootdir', '-o', '--junitxml', '--tb', '--maxfail', '-n', '--cov', '--cov-report', '--ignore', '--deselect', '--confcutdir', '-W', '--durations', '--import-mode'],
};

/** Reporter options the engine replaces with its own machine report. */
const REPORTER_OPTIONS: Record<TestRunner, string[]> = {
  mocha: ['-R', '--reporter', '-O', '--reporter-option', '--reporter-options', '-w', '--watch'],
  jest: ['--json', '--outputFile', '--reporters', '--watch', '--watchAll', '--verbose', '--silent'],
  vitest: ['--reporter', '--outputFile', '-w', '--watch'],
  'node-test': ['--test-reporter', '--test-reporter-destination', '--watch'],
  tape: [],
  ava: ['--tap', '-t', '--verbose', '-v', '--watch', '-w'],
  uvu: [],
  tap: ['-R', '--reporter', '-r', '--reporter-arg', '-w', '--watch', '-o', '--output-file', '-d', '--output-dir'],
  pytest: ['-q', '--quiet', '-v', '--verbose', '-rA', '--tb', '--junitxml'],
};

function looksLikePath(value: string): boolean {
  return /[/*]/.test(value) || /\.(c|m)?[jt]sx?$|\.py$/.test(value) || /^(test|tests|spec|specs|__tests__|src|lib)$/.test(value);
}

/** The runner a step invokes (through wrappers and env assignments), or undefined. */
export function parseInvocation(step: ChainStep): RunnerInvocation | undefined {
  const words = step.segments[0] ?? [];
  const formatter = step.segments.length > 1 ? step.segments.slice(1).map((segment) => segment.map((word) => word.value).join(' ')).join(' | ') : undefined;
  let index = 0;
  let runner: TestRunner | undefined;
  while (index < words.length && !runner) {
    const value = words[index]?.value ?? '';
    const base = value.split('/').pop() ?? value;
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(value) || WRAPPERS.has(base) || (value.startsWith('-') && index > 0)) {
      index++;
      continue;
    }
    if (base in BINARIES) runner = BINARIES[base];
    else if (/^python(3(\.\d+)?)?$/.test(base) && words[index + 1]?.value === '-m' && words[index + 2]?.value === 'pytest') {
      runner = 'pytest';
      index += 2;
    } else if (/^node(js)?$/.test(base)) {
      // `node [options] --test …`, or node running a runner's script (`node node_modules/jest/bin/jest.js`).
      const test = words.findIndex((word, position) => position > index && word.value === '--test');
      const script = words.slice(index + 1).find((word) => !word.value.startsWith('-'))?.value ?? '';
      const viaScript = Object.entries(BINARIES).find(([name]) =>
        new RegExp(`(^|/)(node_modules/\\.bin/${name.replace('.', '\\.')}$|${name.replace('.', '\\.')}/bin/)`).test(script),
      );
      if (test > 0) {
        runner = 'node-test';
        index = test;
      } else if (viaScript) {
        runner = viaScript[1];
        index = words.findIndex((word) => word.value === script);
      } else return undefined;
    } else if ((base === 'pnpm' || base === 'yarn') && (words[index + 1]?.value ?? '') in BINARIES) {
      index++;
      continue;
    } else return undefined;
  }
  if (!runner) return undefined;
  const head = words.slice(0, index + 1);
  const rest = words.slice(index + 1);
  const subcommand = runner === 'vitest' && ['run', 'related'].includes(rest[0]?.value ?? '') ? rest.shift() : undefined;
  if (subcommand) head.push(subcommand);
  else if (runner === 'vitest' && !rest.some((word) => word.value === '--run')) head.push({ raw: 'run', value: 'run' });
  const flags: ShellWord[] = [];
  const paths: ShellWord[] = [];
  for (let position = 0; position < rest.length; position++) {
    const word = rest[position];
    if (!word) continue;
    const name = word.value.split('=')[0] ?? '';
    const takesValue = !word.value.includes('=') && VALUE_OPTIONS[runner].includes(word.value);
    const dropped = REPORTER_OPTIONS[runner].includes(name) || (runner === 'pytest' && /^-r[a-zA-Z]+$/.test(word.value));
    if (word.value.startsWith('-')) {
      const value = takesValue ? rest[++position] : undefined;
      if (dropped) continue;
      flags.push(word);
      if (value) flags.push(value);
      continue;
    }
    if (looksLikePath(word.value) || runner === 'pytest') paths.push(word);
    else flags.push(word);
  }
  const invocation: RunnerInvocation = { runner, head, flags, paths };
  if (formatter) invocation.formatter = formatter;
  if (step.origin) invocation.origin = step.origin;
  return invocation;
}

/** A workspace package: its directory (repo-relative, no trailing slash) and its package.json. */
export interface WorkspaceMember {
  dir: string;
  packageJson: string | undefined;
}

/** The workspace step of a plan: which script ran in every member, and each member's own plan. */
export interface WorkspacePlan {
  manager: 'npm' | 'pnpm' | 'yarn';
  script: string;
  members: Array<{ dir: string; plan: TestPlan }>;
}

const NPM_WORKSPACE_FLAGS = new Set(['--workspaces', '--workspaces=true', '-ws']);
const QUIET_FLAGS = new Set(['--if-present', '--silent', '-s']);
const YARN_FOREACH_FLAGS = new Set(['-A', '--all', '-p', '--parallel', '-t', '--topological', '--topological-dev', '-v', '--verbose', '-i', '--interlaced', '-W', '--worktree']);

/**
 * The script a workspace step runs in every member, or undefined when the step is not one (or
 * narrows the members with options this does not model: `--filter`, `--workspace=x`, `--since`).
 */
export function workspaceCall(words: ShellWord[]): { manager: WorkspacePlan['manager']; script: string } | undefined {
  const values = words.map((word) => word.value);
  const [manager, ...rest] = values;
  const scriptOf = (left: string[]): string | undefined => {
    if (left.length === 1 && (left[0] === 'test' || left[0] === 't' || left[0] === 'tst')) return 'test';
    if (left.length === 2 && (left[0] === 'run' || left[0] === 'run-script')) return left[1];
    return undefined;
  };
  if (manager === 'npm') {
    if (!rest.some((value) => NPM_WORKSPACE_FLAGS.has(value))) return undefined;
    const script = scriptOf(rest.filter((value) => !NPM_WORKSPACE_FLAGS.has(value) && !QUIET_FLAGS.has(value)));
    return script ? { manager, script } : undefined;
  }
  if (manager === 'pnpm') {
    if (!rest.includes('-r') && !rest.includes('--recursive')) return undefined;
    const left = rest.filter((value) => value !== '-r' && value !== '--recursive' && !QUIET_FLAGS.has(value));
    const script = scriptOf(left) ?? (left.length === 1 && left[0] && !left[0].startsWith('-') ? left[0] : undefined);
    return script ? { manager, script } : undefined;
  }
  if (manager === 'yarn' && rest[0] === 'workspaces') {
    // yarn classic: `yarn workspaces run <script>`; berry: `yarn workspaces foreach [flags] run <script>`.
    if (rest[1] === 'run' && rest.length === 3 && rest[2]) return { manager, script: rest[2] };
    if (rest[1] !== 'foreach') return undefined;
    const left = rest.slice(2).filter((value) => !YARN_FOREACH_FLAGS.has(value));
    return left.length === 2 && left[0] === 'run' && left[1] ? { manager, script: left[1] } : undefined;
  }
  return undefined;
}

/** The first step of the chain that runs a script in every workspace package, and where it is. */
function workspaceStepOf(chain: ResolvedChain): { call: NonNullable<ReturnType<typeof workspaceCall>>; index: number } | undefined {
  for (const [index, step] of chain.steps.entries()) {
    const call = step.segments.length === 1 && step.cwd === undefined ? workspaceCall(step.segments[0] ?? []) : undefined;
    if (call) return { call, index };
  }
  return undefined;
}

/** Does the command run a script in every workspace package (so its members are worth reading)? */
export function runsInWorkspaces(command: string, packageJson: string | undefined): boolean {
  const chain = resolveChain(command, packageScripts(packageJson));
  return chain !== undefined && workspaceStepOf(chain) !== undefined;
}

/** A step of the chain run as written, the script it is written in, and the directory a `cd` of the chain moved it to. */
export interface PlannedStep {
  text: string;
  origin?: ScriptOrigin;
  cwd?: string;
}

function plannedStep(step: ChainStep): PlannedStep {
  return { text: stepText(step), ...(step.origin ? { origin: step.origin } : {}), ...(step.cwd ? { cwd: step.cwd } : {}) };
}

/** The repository's test command as the engine understands it. */
export interface TestPlan {
  /** The command as the repository gives it (`npm test`). */
  command: string;
  runner: TestRunner | 'unknown';
  /** The resolved chain's steps before and after the runner step, as written. */
  before: PlannedStep[];
  after: PlannedStep[];
  /** The package.json fields npm puts in its scripts' environment (`npm_package_name`, …). */
  packageEnv: Record<string, string>;
  invocation?: RunnerInvocation;
  /**
   * The runner step as written (with `invocation`), or the chain's last step when no step is a
   * runner Dockhand knows (`tsc && xo && ts-scripts test`: `before` holds the others). Undefined
   * only for a line that is not modelled: it then runs whole.
   */
  step?: PlannedStep;
  /** The scripts followed, for the user: `test: tape test/*.js | tap-spec`. */
  expanded: string[];
  /** The chain's step runs a script in every workspace package: each member's plan (no `invocation` then). */
  workspaces?: WorkspacePlan;
}

/**
 * `members`: the workspace packages (from the root package.json's `workspaces` or
 * pnpm-workspace.yaml); a workspace step is followed into those that have its script.
 */
export function planTestCommand(command: string, packageJson: string | undefined, members: readonly WorkspaceMember[] = []): TestPlan {
  const chain = resolveChain(command, packageScripts(packageJson));
  const packageEnv = packageEnvironment(packageJson);
  const unknown: TestPlan = { command, runner: 'unknown', before: [], after: [], packageEnv, expanded: chain?.expanded ?? [] };
  if (!chain) return unknown;
  const workspace = members.length > 0 ? workspaceStepOf(chain) : undefined;
  if (workspace) {
    const { call, index: workspaceIndex } = workspace;
    const planned = members
      .filter((member) => call.script in packageScripts(member.packageJson))
      .map((member) => ({ dir: member.dir, plan: planTestCommand(`${call.manager} run ${call.script}`, member.packageJson) }));
    if (planned.length > 0) {
      const runners = [...new Set(planned.map((member) => member.plan.runner))];
      return {
        command,
        runner: runners.length === 1 ? (runners[0] ?? 'unknown') : 'unknown',
        before: chain.steps.slice(0, workspaceIndex).map(plannedStep),
        after: chain.steps.slice(workspaceIndex + 1).map(plannedStep),
        packageEnv,
        expanded: [...chain.expanded, ...planned.flatMap((member) => member.plan.expanded.map((line) => `${member.dir}: ${line}`))],
        workspaces: { manager: call.manager, script: call.script, members: planned },
      };
    }
  }
  // A step after a `cd` runs where the root's paths do not apply: counted through the side channel, never narrowed.
  const index = chain.steps.findIndex((step) => step.cwd === undefined && parseInvocation(step) !== undefined);
  const step = chain.steps[index];
  const invocation = step ? parseInvocation(step) : undefined;
  if (!step || !invocation) {
    const last = chain.steps[chain.steps.length - 1];
    if (!last) return unknown;
    return { ...unknown, before: chain.steps.slice(0, -1).map(plannedStep), step: plannedStep(last) };
  }
  return {
    command,
    runner: invocation.runner,
    before: chain.steps.slice(0, index).map(plannedStep),
    after: chain.steps.slice(index + 1).map(plannedStep),
    packageEnv,
    invocation,
    step: plannedStep(step),
    expanded: chain.expanded,
  };
}
