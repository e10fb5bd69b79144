import type { ExecResult, Sandbox } from '../sandbox/types';
import { classifyRun } from './infrastructure';
import { runsTestCommand } from '../sandbox/ci-step-kind';
import { parseTestOutput, type ParsedRun } from './runners';
import type { SuitePlan } from './suite-plan';
import { readSideChannel } from './side-channel';
import { parseFlatTap } from './tap';
import type { TestCaseResult, TestInfrastructure, TestStepOutcome } from './types';
import { toRepoPath } from './runners';

/** One suite run: its plan, what the runner reported, or the infrastructure result instead. */
export interface SuiteRun {
  plan: SuitePlan;
  cases: TestCaseResult[];
  /** Failing tests' output, in run order. */
  failures: string[];
  exitCode: number;
  timedOut: boolean;
  infrastructure?: TestInfrastructure;
  /** Each step of the chain, in order. */
  steps: StepOutcome[];
  /** The runners whose reports were counted (the side channel's jest, vitest, node-test…; the plan's own runner). */
  reportedBy?: string[];
}

export interface SuiteContext {
  /** Repository files, to map printed paths back to repo-relative ones. */
  files: Set<string>;
  /** Files the workspace changed against the base (a crash naming one is the change's). */
  changed: readonly string[];
  timeoutSeconds: number;
  signal?: AbortSignal;
}

async function execute(sandbox: Sandbox, script: string, context: SuiteContext): Promise<ExecResult> {
  const exec: Parameters<Sandbox['exec']>[0] = {
    cmd: ['bash', '-c', script],
    // No bytecode or pytest cache files: the run must not change the workspace diff.
    env: { PYTHONDONTWRITEBYTECODE: '1', CI: '1', NO_COLOR: '1', FORCE_COLOR: '0' },
    timeoutMs: context.timeoutSeconds * 1000,
    outputCapBytes: 4 * 1024 * 1024,
  };
  if (context.signal) exec.signal = context.signal;
  return sandbox.exec(exec);
}

function parse(plan: SuitePlan, stdout: string, files: Set<string>): ParsedRun {
  if (plan.runner === 'custom') return { cases: [], failures: [], reported: false };
  // A command Dockhand does not know may still print TAP; otherwise its exit status decides.
  if (plan.runner === 'unknown') return parseFlatTap(stdout, (printed) => toRepoPath(printed, files, plan.cwd));
  return parseTestOutput(plan.runner, stdout, files, plan.cwd);
}

/** One step's outcome, for the report: how it was counted, and what it counted. */
export type StepOutcome = TestStepOutcome;

/** What a step's output says: the side channel's reports, else its runner's own output (tape, uvu, TAP), else nothing. */
function parseStep(plan: SuitePlan, stdout: string, files: Set<string>, runnerStep: boolean): { parsed: ParsedRun; output: string; reported: boolean; runners: string[] } {
  const own = plan.runner === 'unknown' || plan.runner === 'custom' ? [] : [plan.runner];
  if (runnerStep && !plan.sideChannel) {
    const parsed = parse(plan, stdout, files);
    const reported = parsed.reported ?? parsed.cases.length > 0;
    return { parsed, output: stdout, reported, runners: reported ? own : [] };
  }
  const side = readSideChannel(stdout, files, plan.cwd);
  if (side.parsed) return { parsed: side.parsed, output: side.output, reported: true, runners: side.runners };
  // An unknown command may still print TAP.
  if (runnerStep && plan.runner === 'unknown') {
    const parsed = parse(plan, side.output, files);
    if (parsed.cases.length > 0) return { parsed, output: side.output, reported: true, runners: ['tap'] };
  }
  return { parsed: { cases: [], failures: [], reported: false }, output: side.output, reported: false, runners: [] };
}

/**
 * One step: run, read, classified. A step that times out ends the run (infrastructure); any other
 * step that fails — a linter, a typecheck, a command that is not installed — is a failing case
 * named after it (`<step> (exited with N)`, stable across runs, so the baseline records it as
 * pre-existing) and the later steps still run. The runner step (the one Dockhand reads without
 * the side channel) keeps the runner's own infrastructure verdicts.
 */
async function runOne(sandbox: Sandbox, plan: SuitePlan, name: string, script: string, runnerStep: boolean, run: SuiteRun, context: SuiteContext): Promise<TestInfrastructure | undefined> {
  const result = await execute(sandbox, script, context);
  const step = parseStep(plan, result.stdout, context.files, runnerStep);
  const { output, runners } = step;
  // jest given files it does not take as tests (a selection's `index.test-d.ts` of tsd) prints "No
  // tests found" and exits 1 without writing its report: a report with no test in it, so the
  // engine runs the whole command, not a red step named after a command line of selected files.
  const noTests = !step.reported && result.exitCode === 1 && (plan.runner === 'jest' || runners.includes('jest')) && JEST_NO_TESTS.test(`${result.stdout}\n${result.stderr}`);
  const reported = step.reported || noTests;
  const parsed = step.parsed;
  for (const name of runners) if (!run.reportedBy?.includes(name)) (run.reportedBy ??= []).push(name);
  const shown: ExecResult = { ...result, stdout: output };
  const runner = runnerStep && (reported || !plan.sideChannel) ? plan.runner : 'custom';
  const infrastructure = noTests ? undefined : classifyRun({ runner, command: name, result: shown, parsed, changedFiles: context.changed, timeoutSeconds: context.timeoutSeconds });
  // The runner step not installed, or crashed before any report, says nothing about the code; another step that fails is that step's failure.
  if (infrastructure && (result.timedOut || runnerStep || infrastructure.kind === 'start')) return infrastructure;
  run.cases.push(...parsed.cases);
  run.failures.push(...parsed.failures);
  // A report with no tests in it (jest's "No tests found", pytest's exit 5) is no failure: the
  // engine runs the whole command instead of a selection the runner's configuration excludes.
  const empty = reported && parsed.cases.length === 0;
  const failedCase = parsed.cases.some((testCase) => testCase.outcome === 'failed');
  if (result.exitCode !== 0 && !empty && !failedCase) addExitFailure(run, name, shown, infrastructure?.message);
  if (runnerStep) run.exitCode = result.exitCode;
  run.steps.push({
    name,
    key: runnerStep ? (plan.stepKey ?? plan.command) : name,
    exitCode: result.exitCode,
    counted: reported ? 'tests' : 'exit status',
    passed: parsed.cases.filter((testCase) => testCase.outcome === 'passed').length,
    failed: parsed.cases.filter((testCase) => testCase.outcome === 'failed').length + (result.exitCode !== 0 && !empty && !failedCase ? 1 : 0),
    ...(result.exitCode !== 0 && !reported ? { tail: failureTail(output, result.stderr, name) } : {}),
  });
  return undefined;
}

const JEST_NO_TESTS = /^No tests found, exiting with code 1$/m;

/** A step's name as a failure's heading: a selection's runner step names every selected file, which tells nothing of why it failed. */
export function shortName(name: string): string {
  if (name.length <= 200) return name;
  return `${name.slice(0, 160).replace(/\s+\S*$/, '')} … (${name.length} characters)`;
}

/**
 * Why a step failed, in its own words: the last meaningful lines of what it printed, stderr first
 * (where runners and compilers put their reason), lines that only repeat the command or are empty
 * left out (jest's "No tests found" message prints the selected files as its pattern).
 */
export function failureTail(stdout: string, stderr: string, command: string): string {
  const words = command.split(/\s+/).filter((word) => word.length > 3);
  const meaningful = (text: string) =>
    text
      .split('\n')
      .map((line) => line.trimEnd())
      .filter((line) => line.trim() !== '' && !(line.length > 300 && words.filter((word) => line.includes(word)).length > 10))
      .map((line) => (line.length > 300 ? `${line.slice(0, 300)} …` : line))
      .join('\n');
  const error = meaningful(stderr);
  const out = meaningful(stdout);
  return lastLines(error.length >= 200 || out === '' ? error : `${out}\n${error}`.trim());
}

/** The last lines of a step's output, at most 600 characters (a failed step's why, in the readiness report). */
export function lastLines(text: string): string {
  const trimmed = text.trim();
  if (trimmed.length <= 600) return trimmed;
  const cut = trimmed.slice(-600);
  const newline = cut.indexOf('\n');
  return newline >= 0 && newline < 300 ? cut.slice(newline + 1) : cut;
}

function addExitFailure(run: SuiteRun, command: string, result: ExecResult, why = `exited with ${result.exitCode}`): void {
  const status = `exited with ${result.exitCode}`;
  run.cases.push({ id: `${command} (${status})`, outcome: 'failed', message: why, kind: 'exit_status' });
  // The heading keeps the case's id for the output's ordering (report-output.ts); a long one is cut after it.
  run.failures.push(`✗ ${command} ${status}\n${failureTail(result.stdout, result.stderr, command)}`);
}

/**
 * Runs a plan: every step of the chain as written, in order — the steps before the runner, the
 * runner step, the steps after — each read on its own. A step that fails does not stop the ones
 * after it (a linter red at the base must not hide the tests); only a timeout, or the runner
 * step failing as infrastructure (not installed, crashed before any report), ends the run with
 * that result and no red test.
 */
export async function runSuite(sandbox: Sandbox, plan: SuitePlan, context: SuiteContext): Promise<SuiteRun> {
  const run: SuiteRun = { plan, cases: [], failures: [], exitCode: 0, timedOut: false, steps: [], reportedBy: [] };
  const stopped = (infrastructure: TestInfrastructure): SuiteRun => ({ ...run, cases: [], failures: [], infrastructure, timedOut: infrastructure.kind === 'timeout' });
  for (const step of plan.before) {
    const infrastructure = await runOne(sandbox, plan, step.text, step.script, false, run, context);
    if (infrastructure) return stopped(infrastructure);
  }
  const infrastructure = await runOne(sandbox, plan, plan.command, plan.script, true, run, context);
  if (infrastructure) return stopped(infrastructure);
  for (const step of plan.after) {
    const failed = await runOne(sandbox, plan, step.text, step.script, false, run, context);
    if (failed) return stopped(failed);
  }
  return run;
}

/**
 * A CI step that is no test step and could not start (luxon's `npm run site`: rsync is not in the
 * sandbox) while other steps counted tests is that step's failure, pre-existing at the base like a
 * red linter, not the whole run's infrastructure: it hid luxon's jest suite ("ran no test").
 * A test step that cannot start (`c8 npm test` without c8) still stops the run.
 */
export function setApartStartFailures(runs: SuiteRun[]): void {
  const counted = runs.some((run) => !run.infrastructure && run.cases.some((testCase) => testCase.kind !== 'exit_status'));
  if (!counted) return;
  for (const run of runs) {
    const infrastructure = run.infrastructure;
    if (!infrastructure || (infrastructure.kind !== 'missing' && infrastructure.kind !== 'start') || runsTestCommand(run.plan.command)) continue;
    const name = run.plan.command;
    run.cases = [{ id: `${name} (could not start)`, outcome: 'failed', message: infrastructure.message, kind: 'exit_status' }];
    run.failures = [`✗ ${name} could not start\n${infrastructure.output}`];
    run.steps = [{ name, exitCode: run.exitCode || 127, counted: 'exit status', passed: 0, failed: 1 }];
    delete run.infrastructure;
  }
}
