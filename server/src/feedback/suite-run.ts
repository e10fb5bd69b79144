import type { ExecResult, Sandbox } from '../sandbox/types';
import { classifyRun } from './infrastructure';
import { parseTestOutput, type ParsedRun } from './runners';
import type { SuitePlan, SuiteStep } from './suite-plan';
import { parseFlatTap } from './tap';
import type { TestCaseResult, TestInfrastructure } from './types';
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

/** A step of the repository's chain around the runner (build, lint) run as written, in its script environment. */
async function runStep(sandbox: Sandbox, plan: SuitePlan, step: SuiteStep, context: SuiteContext): Promise<SuiteRun | undefined> {
  const result = await execute(sandbox, step.script, context);
  if (result.exitCode === 0 && !result.timedOut) return undefined;
  const run: SuiteRun = { plan, cases: [], failures: [], exitCode: result.exitCode, timedOut: result.timedOut };
  const infrastructure = classifyRun({ runner: 'custom', command: step.text, result, parsed: { cases: [], failures: [] }, changedFiles: context.changed, timeoutSeconds: context.timeoutSeconds });
  if (infrastructure) run.infrastructure = infrastructure;
  else addExitFailure(run, step.text, result);
  return run;
}

function addExitFailure(run: SuiteRun, command: string, result: ExecResult): void {
  const tail = `${result.stdout}\n${result.stderr}`.trim().slice(-3000);
  const why = `exited with ${result.exitCode}`;
  run.cases.push({ id: `${command} (${why})`, outcome: 'failed', message: why });
  run.failures.push(`✗ ${command} ${why}\n${tail}`);
}

/**
 * Runs a plan: the chain's steps before the runner as written, the runner with its report, the
 * steps after. A step or runner that fails as infrastructure ends the run with that result and
 * no red test; a red exit the report does not explain is one failing case named after the command.
 */
export async function runSuite(sandbox: Sandbox, plan: SuitePlan, context: SuiteContext): Promise<SuiteRun> {
  for (const step of plan.before) {
    const failed = await runStep(sandbox, plan, step, context);
    if (failed) return failed;
  }
  const result = await execute(sandbox, plan.script, context);
  const parsed = parse(plan, result.stdout, context.files);
  const run: SuiteRun = { plan, cases: parsed.cases, failures: parsed.failures, exitCode: result.exitCode, timedOut: result.timedOut };
  const infrastructure = classifyRun({
    runner: plan.runner,
    command: plan.command,
    result,
    parsed,
    changedFiles: context.changed,
    timeoutSeconds: context.timeoutSeconds,
  });
  if (infrastructure) {
    run.infrastructure = infrastructure;
    run.cases = [];
    run.failures = [];
    return run;
  }
  // A report with no tests in it (jest's "No tests found", pytest's exit 5) is no failure: the
  // engine runs the whole command instead of a selection the runner's configuration excludes.
  const empty = parsed.reported === true && parsed.cases.length === 0;
  if (result.exitCode !== 0 && !empty && !parsed.cases.some((testCase) => testCase.outcome === 'failed')) addExitFailure(run, plan.command, result);
  for (const step of plan.after) {
    const failed = await runStep(sandbox, plan, step, context);
    if (failed?.infrastructure) return { ...run, infrastructure: failed.infrastructure, cases: [], failures: [] };
    if (failed) {
      run.cases.push(...failed.cases);
      run.failures.push(...failed.failures);
    }
  }
  return run;
}
