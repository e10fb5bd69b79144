import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { SmartFeedbackEngine } from '../feedback/engine';
import { InMemoryFlakyStore } from '../feedback/flaky';
import type { Sandbox } from '../sandbox/types';
import { describeLineError, patchFiles, readInstances, readPredictions, type EvalInstance, type LineError, type Prediction } from './formats';
import { hasCommit } from './git-tree';
import { atomicWrite, repositoryPathOf } from './run-dir';
import type { SandboxProvider } from '../runner/ports';
import { ensureRepository, openEvalSession, registeredName } from './session';
import { describeRound, gradeRound, type GradeRound, type GradeWay } from './grade-runs';
import { outcomeOf, succeeds, type TestOutcome } from './test-ids';

/*
 * `dockhand eval grade`: for each prediction, a fresh sandbox of the instance's repository at
 * `base_commit` (the same snapshot and gVisor sandbox a task gets), `git apply` of `model_patch`
 * and then of `test_patch`, and the repository's tests through the feedback engine the way the
 * task's verified stop runs them (grade-runs.ts: the whole command, then the selection and the
 * pre-PR command for listed tests the whole command did not count), which reports each test by id.
 * Resolved by SWE-bench's rules (test-ids.ts `succeeds`), in every run. A model patch that touches
 * a file of `test_patch` is rejected before anything runs (it could rewrite the tests that judge
 * it); an empty one is not run. No listed test found at all is an `error`, not `unresolved`.
 *
 * Flaky: a test whose outcome differs between runs (`runs` > 1), or one the engine itself saw fail
 * and then pass on its rerun of the unchanged workspace. Flaky tests are listed; a resolved
 * verdict needs them to pass in every run, so the same predictions grade the same way.
 */

export type GradeStatus = 'resolved' | 'unresolved' | 'empty_patch' | 'patch_touches_tests' | 'patch_failed' | 'test_patch_failed' | 'missing_prediction' | 'infrastructure' | 'error';

export interface TestVerdict {
  id: string;
  kind: 'FAIL_TO_PASS' | 'PASS_TO_PASS';
  /** Outcome per run, in order. */
  outcomes: TestOutcome[];
  flaky: boolean;
  /** The first way of running that found it (grade-runs.ts). */
  way?: GradeWay;
}

export interface InstanceGrade {
  instance_id: string;
  repo: string;
  status: GradeStatus;
  resolved: boolean;
  message?: string;
  tests: TestVerdict[];
  /** SWE-bench's report shape: which listed tests succeeded and which did not. */
  tests_status: Record<'FAIL_TO_PASS' | 'PASS_TO_PASS', { success: string[]; failure: string[] }>;
  flaky: string[];
  runner?: string;
  command?: string;
  seconds: number;
}

export interface GradeOptions {
  instancesFile: string;
  predictionsFile: string;
  /** Where the grading's fleet keeps its data (mirrors, snapshots' sources); reusable. */
  dataDir: string;
  reposDir?: string;
  /** Suite runs per instance (more spot flaky tests). Default 1. */
  runs?: number;
  concurrency?: number;
  only?: string[];
  onProgress?: (line: string) => void;
  /** Each grade as it is reached (in the order they finish): the CLI rewrites grade.json with every one so far. */
  onGrade?: (grades: InstanceGrade[]) => void;
  /**
   * Stops grading (SIGTERM/SIGINT in the CLI): no instance is started, those under way are left
   * out of the summary, and the session closes with its containers removed.
   */
  signal?: AbortSignal;
}

export interface GradeSummary {
  lineErrors: LineError[];
  grades: InstanceGrade[];
  resolved: number;
}

function emptyStatus(): InstanceGrade['tests_status'] {
  return { FAIL_TO_PASS: { success: [], failure: [] }, PASS_TO_PASS: { success: [], failure: [] } };
}

function verdictOnly(instance: EvalInstance, status: GradeStatus, message: string, started: number): InstanceGrade {
  const tests_status = emptyStatus();
  tests_status.FAIL_TO_PASS.failure = [...instance.FAIL_TO_PASS];
  return { instance_id: instance.instance_id, repo: instance.repo, status, resolved: false, message, tests: [], tests_status, flaky: [], seconds: (Date.now() - started) / 1000 };
}

async function applyPatch(sandbox: Sandbox, patch: string): Promise<string | undefined> {
  const result = await sandbox.exec({ cmd: ['git', 'apply', '--whitespace=nowarn', '-'], stdin: patch.endsWith('\n') ? patch : `${patch}\n`, timeoutMs: 60_000 });
  return result.exitCode === 0 ? undefined : (result.stderr || result.stdout).trim().split('\n').slice(0, 5).join('\n');
}

/** Grades one prediction in a fresh sandbox (released afterwards). */
export async function gradeInstance(sandboxes: SandboxProvider, instance: EvalInstance, prediction: Prediction | undefined, options: { repo: string; runs: number }): Promise<InstanceGrade> {
  const started = Date.now();
  if (!prediction) return verdictOnly(instance, 'missing_prediction', 'no prediction for this instance', started);
  const patch = prediction.model_patch;
  if (patch.trim() === '') return verdictOnly(instance, 'empty_patch', 'the model patch is empty', started);
  const testFiles = new Set(patchFiles(instance.test_patch));
  const touched = patchFiles(patch).filter((file) => testFiles.has(file));
  if (touched.length > 0) {
    return verdictOnly(instance, 'patch_touches_tests', `the model patch changes ${touched.join(', ')}, which test_patch sets; it is rejected unrun`, started);
  }
  const { sandbox } = await sandboxes.acquire({ repo: options.repo, baseSha: instance.base_commit, taskId: `grade-${instance.instance_id}` });
  try {
    const modelFailure = await applyPatch(sandbox, patch);
    if (modelFailure) return verdictOnly(instance, 'patch_failed', `model_patch does not apply: ${modelFailure}`, started);
    const testFailure = instance.test_patch.trim() === '' ? undefined : await applyPatch(sandbox, instance.test_patch);
    if (testFailure) return verdictOnly(instance, 'test_patch_failed', `test_patch does not apply on top of the model patch: ${testFailure}`, started);
    const flakyStore = new InMemoryFlakyStore();
    const engine = new SmartFeedbackEngine({ repo: `eval-grade/${instance.instance_id}`, flakyStore });
    const listed = [...instance.FAIL_TO_PASS, ...instance.PASS_TO_PASS];
    const rounds: GradeRound[] = [];
    for (let run = 0; run < options.runs; run++) rounds.push(await gradeRound(engine, sandbox, listed));
    const engineFlaky = new Set((await flakyStore.list(`eval-grade/${instance.instance_id}`)).map((test) => test.testId));
    const tests: TestVerdict[] = [];
    const tests_status = emptyStatus();
    for (const kind of ['FAIL_TO_PASS', 'PASS_TO_PASS'] as const) {
      for (const id of instance[kind]) {
        const found = rounds.map((round) => round.outcomes.get(id) ?? { outcome: 'missing' as const });
        const outcomes = found.map((entry) => entry.outcome);
        const way = found.find((entry) => entry.way)?.way;
        const flaky = new Set(outcomes).size > 1 || [...engineFlaky].some((flakyId) => outcomeOf(id, [{ id: flakyId, outcome: 'passed' }]) !== 'missing');
        tests.push({ id, kind, outcomes, flaky, ...(way ? { way } : {}) });
        tests_status[kind][outcomes.every((outcome) => succeeds(kind, outcome)) ? 'success' : 'failure'].push(id);
      }
    }
    const last = rounds.at(-1);
    const command = last ? describeRound(last) : undefined;
    const runners = [...new Set(last?.reports.flatMap(({ report }) => (report.runner ? [report.runner] : [])) ?? [])];
    const common = {
      instance_id: instance.instance_id,
      repo: instance.repo,
      tests,
      tests_status,
      flaky: tests.filter((test) => test.flaky).map((test) => test.id),
      ...(runners.length > 0 ? { runner: runners.join(', ') } : {}),
      ...(command ? { command } : {}),
    };
    const seconds = () => (Date.now() - started) / 1000;
    const infrastructure = unjudgedByInfrastructure(rounds, tests);
    if (infrastructure) return { ...common, status: 'infrastructure', resolved: false, message: infrastructure, seconds: seconds() };
    const uncollected = uncollectedMessage(rounds, tests);
    const resolved = !uncollected && tests_status.FAIL_TO_PASS.failure.length === 0 && tests_status.PASS_TO_PASS.failure.length === 0;
    const notFound = tests.filter((test) => test.outcomes.includes('missing')).map((test) => test.id);
    const notes = [
      ...(notFound.length > 0 ? [`${notFound.length} listed test(s) were not found in any run: ${sample(notFound)}`] : []),
      ...stoppedRuns(rounds).map((stopped) => `${stopped}; the listed tests were judged on the other runs`),
    ];
    const message = uncollected ?? (notes.length > 0 ? notes.join('; ') : undefined);
    return { ...common, status: uncollected ? 'error' : resolved ? 'resolved' : 'unresolved', resolved, ...(message ? { message } : {}), seconds: seconds() };
  } finally {
    await sandboxes.release(sandbox);
  }
}

/** Ways of the first round that ran no test or stopped short (collection errors, a runner that could not run). */
function stoppedRuns(rounds: readonly GradeRound[]): string[] {
  return (rounds[0]?.reports ?? []).flatMap(({ way, report }) => {
    const unloaded = report.cases.filter((testCase) => testCase.kind === 'load_error').map((testCase) => testCase.id);
    if (report.infrastructure) return [`the ${way} run could not judge: ${report.infrastructure.message}`];
    if (report.ran === 0 || unloaded.length > 0) return [`the ${way} run ran ${report.ran ?? 0} test(s)${unloaded.length > 0 ? `, ${unloaded.length} test file(s) could not be collected or loaded: ${sample(unloaded)}` : ''}`];
    return [];
  });
}

function sample(ids: readonly string[], count = 5): string {
  return `${ids.slice(0, count).join(', ')}${ids.length > count ? ', …' : ''}`;
}

/**
 * A runner that could not run (not installed, crashed, timed out) in a run where no listed test
 * was found: the grade cannot say anything about the patch (`infrastructure`, not a red test).
 */
function unjudgedByInfrastructure(rounds: readonly GradeRound[], tests: readonly TestVerdict[]): string | undefined {
  if (!tests.every((test) => test.outcomes.includes('missing'))) return undefined;
  const broken = rounds.flatMap((round) => round.reports).find(({ report }) => report.infrastructure);
  const infrastructure = broken?.report.infrastructure;
  return infrastructure ? `${infrastructure.message} (${infrastructure.action})` : undefined;
}

/**
 * Why the tests could not judge the patch, when they could not: a round in which no way ran any
 * test (pytest stops at a collection error), files that failed to load while listed tests are
 * missing from the run, or no listed test found at all (the ids the runs gave are named, so a
 * mismatch of names shows). Such an instance is an `error` (SWE-bench's error_ids), not
 * `unresolved`.
 */
function uncollectedMessage(rounds: readonly GradeRound[], tests: readonly TestVerdict[]): string | undefined {
  const reports = rounds.flatMap((round) => round.reports.map(({ report }) => report));
  const unloaded = [...new Set(reports.flatMap((run) => run.cases.filter((testCase) => testCase.kind === 'load_error').map((testCase) => `${testCase.id}${testCase.message ? ` (${testCase.message})` : ''}`)))];
  const missing = tests.filter((test) => test.outcomes.includes('missing')).map((test) => test.id);
  const none = rounds.some((round) => round.reports.every(({ report }) => report.ran === 0));
  const allMissing = tests.length > 0 && missing.length === tests.length;
  if (!none && !allMissing && (unloaded.length === 0 || missing.length === 0)) return undefined;
  const files = unloaded.length > 0 ? `; ${unloaded.length} test file(s) could not be collected or loaded: ${unloaded.slice(0, 5).join('; ')}${unloaded.length > 5 ? '; …' : ''}` : '';
  if (none) return `the test suite ran no test${files}`;
  if (unloaded.length > 0) return `the tests could not be collected (${missing.length} listed test(s) did not run: ${sample(missing)})${files}`;
  const seen = [...new Set(reports.flatMap((run) => run.cases.filter((testCase) => testCase.kind === undefined).map((testCase) => testCase.id)))];
  const ran = rounds[0]?.reports.map(({ way, report }) => `${way} ran ${report.ran ?? 'an unknown number of'} test(s): \`${report.command}\``).join('; ') ?? '';
  return `none of the ${tests.length} listed test(s) was found in the runs (${ran})${seen.length > 0 ? `; they named e.g. ${sample(seen, 3)}` : '; no run named any test'}`;
}

/** Runs `work` over `items` with at most `limit` at once, in order of start. */
export async function inPool<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const index = next++;
      const item = items[index];
      if (item !== undefined) results[index] = await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}

export async function gradePredictions(options: GradeOptions): Promise<GradeSummary> {
  const instancesFile = resolve(options.instancesFile);
  const reposDir = resolve(options.reposDir ?? dirname(instancesFile));
  const instancesRead = readInstances(readFileSync(instancesFile, 'utf8'));
  const predictionsRead = readPredictions(readFileSync(resolve(options.predictionsFile), 'utf8'));
  const lineErrors = [...instancesRead.errors, ...predictionsRead.errors];
  for (const error of instancesRead.errors) options.onProgress?.(`skipped ${describeLineError(error, instancesFile)}`);
  for (const error of predictionsRead.errors) options.onProgress?.(`skipped ${describeLineError(error, options.predictionsFile)}`);
  const predictions = new Map(predictionsRead.records.map((prediction) => [prediction.instance_id, prediction]));
  // SWE-bench grades the predictions it is given: instances without one are not part of the grade.
  const instances = instancesRead.records.filter((instance) => predictions.has(instance.instance_id) && (!options.only || options.only.includes(instance.instance_id)));
  const session = await openEvalSession({ dataDir: options.dataDir, scripted: false, runTasks: false, ...(options.concurrency ? { concurrency: options.concurrency } : {}) });
  // Finished grades in the order they finished; a grade still under way at a stop is not one.
  const finished: InstanceGrade[] = [];
  const signal = options.signal;
  try {
    const pool = inPool(instances, session.config.scheduler.concurrency, async (instance) => {
      if (signal?.aborted) return undefined;
      const started = Date.now();
      let grade: InstanceGrade;
      try {
        const repoPath = repositoryPathOf(instance, reposDir);
        if (!hasCommit(repoPath, instance.base_commit)) throw new Error(`base_commit ${instance.base_commit} is not in ${repoPath}`);
        const name = registeredName(instance.repo);
        const repo = await ensureRepository(session, name, repoPath, instance.base_commit);
        grade = await gradeInstance(session.sandboxes.provider, instance, predictions.get(instance.instance_id), { repo, runs: options.runs ?? 1 });
      } catch (error) {
        grade = verdictOnly(instance, 'error', error instanceof Error ? error.message : String(error), started);
      }
      if (signal?.aborted) return undefined;
      finished.push(grade);
      options.onGrade?.([...finished]);
      options.onProgress?.(`${instance.instance_id}: ${grade.status}${grade.message ? ` (${grade.message.split('\n')[0]})` : ''}${grade.flaky.length > 0 ? `; flaky: ${grade.flaky.join(', ')}` : ''}`);
      return grade;
    });
    pool.catch(() => undefined);
    // A stop does not wait for the grades under way: closing the session ends their sandboxes and builds.
    const all = await new Promise<(InstanceGrade | undefined)[] | undefined>((resolve, reject) => {
      if (signal?.aborted) return resolve(undefined);
      signal?.addEventListener('abort', () => resolve(undefined), { once: true });
      pool.then(resolve, reject);
    });
    // In the instances file's order.
    const grades = all ? all.flatMap((grade) => (grade ? [grade] : [])) : instances.flatMap((instance) => finished.filter((grade) => grade.instance_id === instance.instance_id));
    return { lineErrors, grades, resolved: grades.filter((grade) => grade.resolved).length };
  } finally {
    await session.close();
  }
}

/** SWE-bench's summary report beside our per-instance detail. */
export function writeGradeReport(file: string, summary: GradeSummary, model: string): void {
  const ids = (status: (grade: InstanceGrade) => boolean) => summary.grades.filter(status).map((grade) => grade.instance_id).sort();
  const report = {
    model_name_or_path: model,
    total_instances: summary.grades.length,
    submitted_instances: summary.grades.filter((grade) => grade.status !== 'missing_prediction').length,
    completed_instances: summary.grades.filter((grade) => grade.status === 'resolved' || grade.status === 'unresolved').length,
    resolved_instances: summary.resolved,
    unresolved_instances: summary.grades.filter((grade) => grade.status === 'unresolved').length,
    empty_patch_instances: summary.grades.filter((grade) => grade.status === 'empty_patch').length,
    error_instances: summary.grades.filter((grade) => !['resolved', 'unresolved', 'empty_patch'].includes(grade.status)).length,
    resolved_ids: ids((grade) => grade.resolved),
    unresolved_ids: ids((grade) => grade.status === 'unresolved'),
    empty_patch_ids: ids((grade) => grade.status === 'empty_patch'),
    error_ids: ids((grade) => !['resolved', 'unresolved', 'empty_patch'].includes(grade.status)),
    flaky_tests: Object.fromEntries(summary.grades.filter((grade) => grade.flaky.length > 0).map((grade) => [grade.instance_id, grade.flaky])),
    instances: Object.fromEntries(summary.grades.map((grade) => [grade.instance_id, grade])),
  };
  atomicWrite(file, `${JSON.stringify(report, null, 2)}\n`);
}
