import type { ExecResult } from '../sandbox/types';
import type { ParsedRun } from './runners';
import type { InfrastructureKind, TestInfrastructure, TestRunner } from './types';

/*
 * Infrastructure or code? A runner that is not installed, cannot start, crashes, times out or
 * gives no report says nothing about the change under test: it must never count as a red test,
 * or the agent spends its turns "fixing" an environment it cannot fix. What stays code:
 * anything the runner reported (a failing test, a suite that failed to load inside a JSON or
 * TAP report, a pytest collection error), and a runner that died while loading a file the
 * workspace changed (a syntax error the agent introduced names its file in the output).
 */

const RUNNER_PACKAGES: Record<TestRunner, string[]> = {
  vitest: ['vitest'],
  jest: ['jest', 'jest-cli'],
  mocha: ['mocha'],
  tape: ['tape'],
  ava: ['ava'],
  uvu: ['uvu'],
  tap: ['tap'],
  'node-test': [],
  pytest: ['pytest', '_pytest'],
};

export interface RunToClassify {
  runner: TestRunner | 'unknown' | 'custom';
  /** The command as shown to the user. */
  command: string;
  result: ExecResult;
  parsed: ParsedRun;
  /** Workspace files changed against the base: a crash naming one of them is the change's. */
  changedFiles: readonly string[];
  timeoutSeconds: number;
}

const SIGNALS: Record<number, string> = { 134: 'SIGABRT', 137: 'SIGKILL, often out of memory', 139: 'SIGSEGV', 143: 'SIGTERM' };

function lastLines(text: string, count: number): string {
  return text.trim().split('\n').slice(-count).join('\n');
}

/** The first line that matches, trimmed, for a message. */
function lineOf(text: string, pattern: RegExp): string | undefined {
  return text.split('\n').find((line) => pattern.test(line))?.trim().slice(0, 300);
}

function missingRunner(runner: RunToClassify['runner'], output: string, exitCode: number): string | undefined {
  const notFound = lineOf(output, /command not found|: not found$|No such file or directory.*node_modules\/\.bin/);
  if (exitCode === 127 || notFound) return notFound ?? 'a command of the test script was not found (exit 127)';
  const script = lineOf(output, /Missing script:|ERR_PNPM_NO_SCRIPT|error Command ".*" not found|Usage Error: Couldn't find a script/);
  if (script) return script;
  if (runner === 'pytest') return lineOf(output, /No module named '?_?pytest'?/);
  if (runner === 'unknown' || runner === 'custom') return undefined;
  for (const name of RUNNER_PACKAGES[runner]) {
    const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const line = lineOf(output, new RegExp(`Cannot find (module|package) '(${escaped}(/[^']*)?|[^']*/node_modules/${escaped}/[^']*)'`));
    if (line) return line;
  }
  return undefined;
}

function crashOf(output: string, exitCode: number): string | undefined {
  const known = lineOf(output, /RangeError: WebAssembly|Out of memory|JavaScript heap out of memory|Segmentation fault|Aborted \(core dumped\)|Fatal process out of memory/);
  if (known) return known;
  if (exitCode > 128 && exitCode < 160) return `killed by a signal (exit ${exitCode}${SIGNALS[exitCode] ? `: ${SIGNALS[exitCode]}` : ''})`;
  return undefined;
}

function infrastructure(kind: InfrastructureKind, command: string, detail: string, output: string): TestInfrastructure {
  const lead: Record<InfrastructureKind, string> = {
    missing: 'the test runner could not start',
    start: 'the test runner could not start',
    crash: 'the test runner crashed',
    timeout: 'the test runner timed out',
    no_report: 'the test runner gave no report',
    no_tests: 'the test suite ran no test',
  };
  return { kind, command, message: `${lead[kind]}: \`${command}\`: ${detail}`, action: infrastructureAction(), output: lastLines(output, 40).slice(-4000) };
}

/** An infrastructure result, or undefined when the run's outcome is the code's (green or red). */
export function classifyRun(run: RunToClassify): TestInfrastructure | undefined {
  const { result, parsed, command } = run;
  const output = `${result.stdout}\n${result.stderr}`;
  if (result.timedOut) return infrastructure('timeout', command, `no result after ${run.timeoutSeconds} s; the run was stopped`, output);
  const reported = parsed.reported ?? parsed.cases.length > 0;
  if (reported && parsed.cases.length > 0) return undefined;
  const missing = missingRunner(run.runner, output, result.exitCode);
  if (missing) return infrastructure('missing', command, missing, output);
  if (reported) return undefined;
  const usage = pytestUsageError(output);
  if (usage) return { ...infrastructure('start', command, usage.detail, output), action: usage.action };
  const crash = crashOf(output, result.exitCode);
  if (crash && !mentionsChanged(output, run.changedFiles)) return infrastructure('crash', command, `${crash}, before reporting any test`, output);
  // Without a runner report to expect, the exit status is the result.
  if (run.runner === 'unknown' || run.runner === 'custom') return undefined;
  if (mentionsChanged(output, run.changedFiles)) return undefined;
  if (result.exitCode === 0) return infrastructure('no_report', command, 'it exited 0 without the report it was asked for', output);
  const why = lineOf(output, /Error|error:|ERR_/) ?? lastLines(output, 1);
  return infrastructure('start', command, `exited with ${result.exitCode} before reporting any test (${why || 'no output'})`, output);
}

/** Options pytest plugins add, and the plugin that adds them (what `addopts` most often names). */
const PYTEST_PLUGIN_OPTIONS: Array<[RegExp, string]> = [
  [/^--(no-)?cov/, 'pytest-cov'],
  [/^(-n|--numprocesses|--dist|--maxprocesses|--max-worker-restart)\b/, 'pytest-xdist'],
  [/^--timeout/, 'pytest-timeout'],
  [/^--(reruns|only-rerun)/, 'pytest-rerunfailures'],
  [/^--benchmark/, 'pytest-benchmark'],
  [/^--asyncio-mode/, 'pytest-asyncio'],
  [/^(-p no:)?--randomly|^-p randomly/, 'pytest-randomly'],
  [/^--mypy/, 'pytest-mypy'],
  [/^--(html|self-contained-html)/, 'pytest-html'],
  [/^--(hypothesis)/, 'hypothesis'],
  [/^--(doctest-glob|doctest-modules)/, 'pytest (a newer version)'],
  [/^--(env|envfile)/, 'pytest-env'],
  [/^--(mock)/, 'pytest-mock'],
];

/**
 * pytest refusing its own command line (exit 4) before any test: most often an option in
 * `addopts` (pytest.ini, pyproject.toml, setup.cfg, tox.ini) that a plugin not installed would
 * add (`--cov`, `-n auto`). Which option, which plugin, and which file, so the fix is one step.
 */
export function pytestUsageError(output: string): { detail: string; action: string } | undefined {
  const refused = /^(?:pytest|[\w.-]+\.py|__main__\.py): error: unrecognized arguments: (.+)$/m.exec(output);
  if (!refused?.[1]) return undefined;
  const options = refused[1].trim().split(/\s+/);
  const plugins = [...new Set(options.flatMap((option) => PYTEST_PLUGIN_OPTIONS.filter(([pattern]) => pattern.test(option)).map(([, plugin]) => plugin)))];
  const inifile = /^\s*(?:inifile|configfile): (.+)$/m.exec(output)?.[1]?.trim();
  const from = inifile ? ` (addopts of ${inifile.split('/').pop()})` : '';
  const which = plugins.length > 0 ? `: the plugin ${plugins.join(', ')} that adds it is not installed in the sandbox` : ': no installed plugin adds it';
  const detail = `pytest refused ${options.map((option) => `\`${option}\``).join(' ')}${from}${which}; no test ran (exit 4)`;
  const action = plugins.length > 0
    ? `Install ${plugins.join(', ')} where the repository's install gets its test dependencies (its requirements or pyproject's test extra, or setup: in .dockhand/environment.yml), then run \`dockhand repo check <repo>\`.`
    : `Name the plugin that adds ${options[0]} in the repository's test dependencies, or set test.command in .dockhand/environment.yml to the command its CI runs.`;
  return { detail, action };
}

function mentionsChanged(output: string, changed: readonly string[]): boolean {
  return changed.some((path) => output.includes(path));
}

/** What a user can do about it, for the task's failure message. */
export function infrastructureAction(source?: string): string {
  const where = source && source !== 'default' ? ` (it comes from ${source})` : '';
  return (
    `This is not caused by the change. Check the repository's test command${where}: set \`test.command\` in ` +
    '`.dockhand/environment.yml` to the command its CI runs, make sure the install provides the runner, then run ' +
    '`dockhand repo check <repo>` to see the tests at the base commit.'
  );
}
