import { createHash } from 'node:crypto';
import type { Sandbox } from '../sandbox/types';
import { InMemoryBaselineStore } from './baseline';
import { detectCheckers, runCheckers } from './checks';
import { InMemoryFlakyStore } from './flaky';
import { infrastructureAction } from './infrastructure';
import { buildGraph, GraphCache, overlayChanges, type ImpactGraph } from './graph';
import { compactOutput } from './report-output';
import { detectJsRunner, type TestTarget } from './runners';
import { selectTests, type Selection } from './selection';
import { matchesTest, reproducingOutcomes, selectReproducingTests } from './reproducing';
import { readBaseSnapshot, readWorkspaceChanges, workspaceHash, type WorkspaceChanges } from './snapshot';
import { customPlan, detectedPlan, selectableFiles, selectedPlan, selectedWorkspacePlans, wholeCommandPlan, wholeWorkspacePlans, type PlanContext, type SuitePlan } from './suite-plan';
import { runSuite, setApartStartFailures, type SuiteContext, type SuiteRun } from './suite-run';
import { planRecipeSteps, stepsReason } from './recipe-steps';
import { blameRunner, blameTimeout, configuresTests } from './blame';
import { ranOf } from './tests-ran';
import { judgeBaseSteps, judgeSteps, judgesTheChange, unjudgeableCases } from './judgement';
import { planTestCommand, runsInWorkspaces, type TestPlan, type WorkspaceMember } from './test-command';
import { workspaceDirs, workspaceGlobs } from './workspaces';
import type {
  BaselineKey,
  BaselineResult,
  BaselineStore,
  ChecksConfig,
  ReproducingSelection,
  Diagnostic,
  FeedbackEngine,
  FlakyObservation,
  FlakyStore,
  RunTestsOptions,
  TestCaseResult,
  TestReport,
  TestRunner,
} from './types';

export interface SmartFeedbackEngineOptions {
  /** Repo identity for the graph cache, the flaky quarantine and the baseline (e.g. `github.com/acme/shop`). */
  repo: string;
  checks?: ChecksConfig;
  flakyStore?: FlakyStore;
  /** Where baselines at base SHAs are kept (default: in memory, for this engine only). */
  baselineStore?: BaselineStore;
  /** Shared across engines so a second task on the same base SHA reuses the parsed graph. */
  cache?: GraphCache;
  /** Characters of output the model gets. */
  outputCapChars?: number;
  /** Failing tests rerun at most this many; more failures than that are not flakiness. */
  maxRerun?: number;
  now?: () => Date;
}

interface Analysis {
  changes: WorkspaceChanges;
  graph: ImpactGraph;
  selection: Selection;
}

interface PlannedRuns {
  reason: string;
  plans: SuitePlan[];
  /** The plans are the whole test command (not a selection of files). */
  whole: boolean;
  /** What runs when the selection's runner finds no tests in the selected files. */
  fallback?: SuitePlan[];
}

/**
 * Test-impact analysis, the repo's checkers and the flaky quarantine behind the `FeedbackEngine`
 * port. The graph is built on the server from one read of the base commit (cached per base SHA)
 * plus the changed files: parsing on the server is faster than starting Node or Python in the
 * sandbox for every call, and keeps the sandbox image free of analysis tooling.
 *
 * Reruns are the engine's decision alone: a red run reruns only its failing tests, once, on the
 * unchanged workspace. The agent has no way to ask for "again until green".
 */
export class SmartFeedbackEngine implements FeedbackEngine {
  private readonly cache: GraphCache;
  private readonly flaky: FlakyStore;
  private readonly checks: ChecksConfig;
  private readonly baselines: BaselineStore;

  constructor(private readonly options: SmartFeedbackEngineOptions) {
    this.cache = options.cache ?? new GraphCache();
    this.flaky = options.flakyStore ?? new InMemoryFlakyStore();
    this.baselines = options.baselineStore ?? new InMemoryBaselineStore();
    this.checks = options.checks ?? {};
  }

  /** The selection alone (for the bench, logs and tests). */
  async analyze(sandbox: Sandbox): Promise<Analysis> {
    const base = await this.cache.get(this.options.repo, sandbox.baseSha, () => readBaseSnapshot(sandbox, sandbox.baseSha));
    const changes = await readWorkspaceChanges(sandbox, sandbox.baseSha);
    const current = overlayChanges(base, changes);
    const graph = buildGraph(current.files, current.records, current.manifests);
    const baseRecords = new Map(Object.entries(base.records));
    let baseGraph: ImpactGraph | undefined;
    const selection = selectTests(
      graph,
      {
        records: baseRecords,
        graph: () => (baseGraph ??= buildGraph(new Set(base.files), baseRecords, new Map(Object.entries(base.manifests)))),
      },
      changes,
      this.checks.fullSuiteOn,
    );
    return { changes, graph, selection };
  }

  async runTests(sandbox: Sandbox, opts: RunTestsOptions): Promise<TestReport> {
    const started = Date.now();
    const analysis = await this.analyze(sandbox);
    const planned = await this.plan(sandbox, analysis, opts);
    const context: SuiteContext = {
      files: analysis.graph.files,
      changed: [...analysis.changes.changed, ...analysis.changes.deleted],
      timeoutSeconds: this.checks.timeoutSeconds ?? 600,
      ...(opts.signal ? { signal: opts.signal } : {}),
    };
    const diffBefore = await workspaceHash(sandbox, analysis.changes);
    let runs: SuiteRun[] = [];
    for (const plan of planned.plans) runs.push(await runSuite(sandbox, plan, context));
    // The runner's own configuration decides what a test is: a selection it found nothing in runs whole,
    // and so does one it refused without a report (a red exit named after a command line of selected files judges nothing).
    const refused = runs.find((run) => !run.infrastructure && run.plan.runner !== 'unknown' && run.plan.runner !== 'custom' && run.steps.some((step) => step.name === run.plan.command && step.counted === 'exit status' && step.exitCode !== 0));
    if (planned.whole === false && planned.fallback && runs.length > 0 && (refused || runs.every((run) => !run.infrastructure && run.cases.length === 0))) {
      planned.reason += refused
        ? `; the runner gave no report on the selected files (${refused.plan.runner} exited with ${refused.exitCode}): ran the whole command`
        : '; the runner found no tests in the selected files: ran the whole command';
      planned.whole = true;
      runs = [];
      for (const plan of planned.fallback) runs.push(await runSuite(sandbox, plan, context));
    }
    setApartStartFailures(runs);

    const baseline = await this.baselines.get(this.baselineKey(sandbox));
    // The whole suite finished at the base: a run of the changed workspace that hangs is the change's.
    if (baseline && context.changed.length > 0) for (const run of runs) if (run.infrastructure?.kind === 'timeout') blameTimeout(run, baseline.seconds);
    // The runner ran at the base: one that does not start now, on the same whole command or after
    // the change touched how the tests run (package.json's scripts, the runner's config), is the change's.
    const runnerFiles = context.changed.filter(configuresTests);
    if (baseline && context.changed.length > 0 && (planned.whole || runnerFiles.length > 0)) {
      for (const run of runs) if (run.infrastructure) blameRunner(run, baseline, runnerFiles);
    }
    const infrastructure = runs.find((run) => run.infrastructure)?.infrastructure;
    // A specific action (pytest's refused addopts plugin) stays; the generic one names where the command comes from.
    if (infrastructure && sandbox.environment && infrastructure.action === infrastructureAction()) infrastructure.action = infrastructureAction(sandbox.environment.test.source);
    const quarantinedIds = new Set((await this.flaky.list(this.options.repo)).map((test) => test.testId));
    const preExistingIds = new Set(baseline?.preExistingFailures ?? []);
    const rerunNotes = infrastructure ? [] : await this.rerunFailures(sandbox, runs, quarantinedIds, preExistingIds, diffBefore, context);

    const cases = runs.flatMap((run) => run.cases);
    const steps = runs.flatMap((run) => run.steps);
    judgeSteps(steps, baseline);
    const reproducing = opts.reproducing ?? [];
    // A reproducing test fails at the base too, but the ticket is about it: never excused.
    const excusedIds = new Set([...preExistingIds].filter((id) => !cases.some((testCase) => testCase.id === id && reproducing.some((test) => matchesTest(test, id, testCase.file)))));
    // A step red at the base by its exit status cannot judge the change: its red exit decides nothing, whatever its id now.
    for (const id of unjudgeableCases(steps, cases)) excusedIds.add(id);
    const deciding = cases.filter((testCase) => !quarantinedIds.has(testCase.id));
    const failing = deciding.filter((testCase) => testCase.outcome === 'failed');
    const preExisting = [...new Set(failing.filter((testCase) => excusedIds.has(testCase.id)).map((testCase) => testCase.id))];
    const quarantined = [...new Set(cases.filter((testCase) => quarantinedIds.has(testCase.id)).map((testCase) => testCase.id))];
    const runners = [...new Set(runs.map((run) => run.plan.runner))];
    const report: TestReport = {
      command: runs.map((run) => run.plan.command).join(' && ') || '(nothing to run)',
      scope: opts.scope,
      selectionReason: planned.reason,
      passed: cases.filter((testCase) => testCase.outcome === 'passed').length,
      failed: failing.length,
      skipped: cases.filter((testCase) => testCase.outcome === 'skipped').length,
      ...ranOf(runs),
      steps,
      judged: judgesTheChange(steps, cases),
      ok: !infrastructure && failing.every((testCase) => excusedIds.has(testCase.id)),
      quarantined,
      output: '',
      durationMs: Date.now() - started,
      cases,
      wholeCommand: planned.whole,
      preExisting,
    };
    const runner = runners.length === 1 ? runners[0] : undefined;
    if (runner && runner !== 'custom') report.runner = runner;
    if (infrastructure) report.infrastructure = infrastructure;
    if (reproducing.length > 0 && !infrastructure) report.reproducing = reproducingOutcomes(reproducing, cases, baseline);
    report.output = infrastructure
      ? `${infrastructure.message}\n${infrastructure.output}`
      : compactOutput(report, runs, quarantinedIds, excusedIds, rerunNotes, this.options.outputCapChars ?? 8000);
    return report;
  }

  /**
   * What runs. With an environment recipe, the repository's test command: its runner on the
   * selected files when it can take them, else the whole command. Without one (test doubles),
   * the detected runner per language.
   */
  private async plan(sandbox: Sandbox, analysis: Analysis, opts: RunTestsOptions): Promise<PlannedRuns> {
    const { selection } = analysis;
    const environment = sandbox.environment;
    if (!environment) return this.detectedPlans(sandbox, analysis, opts);
    // The scripts' environment names the toolchain versions the recipe mounts.
    const context: PlanContext = { toolchain: { ...(environment.node ? { node: environment.node.version } : {}), ...(environment.packageManager ? { packageManager: environment.packageManager } : {}) } };
    if (this.checks.python) context.python = this.checks.python;
    const packageJson = await readText(sandbox, 'package.json');
    const prePr = opts.scope === 'full' && opts.prePr ? (environment.prePr ?? (this.checks.preMerge ? { command: this.checks.preMerge, source: 'checks.preMerge' } : undefined)) : undefined;
    if (prePr) {
      return { reason: `scope full: the pre-PR command (from ${prePr.source})`, plans: [wholeCommandPlan(planTestCommand(prePr.command, packageJson), context)], whole: true };
    }
    // The CI's steps, each in its directory and environment (recipe-steps.ts).
    const steps = environment.test.steps;
    if (steps && steps.length > 0) {
      const sources = { read: (path: string) => readText(sandbox, path), members: (root: string | undefined) => workspaceMembers(sandbox, root, analysis.graph.files) };
      const planned = await planRecipeSteps(steps, sources, context, opts.scope === 'full' || selection.mode !== 'selected' ? undefined : selection.tests);
      if (opts.scope === 'full') return { reason: `scope full: the repository's test steps (from ${environment.test.source})`, plans: planned.whole, whole: true };
      if (selection.mode === 'none') return { reason: selection.reason, plans: [], whole: false };
      const reason = `${selection.reason}; ${stepsReason(selection, steps, planned)} (from ${environment.test.source})`;
      if (selection.mode === 'full' || !planned.selected) return { reason, plans: planned.whole, whole: true };
      return { reason, plans: planned.selected.plans, whole: false, fallback: planned.whole };
    }
    // Members are read (one file each) only for a command that runs in them.
    const members = runsInWorkspaces(environment.test.command, packageJson) ? await workspaceMembers(sandbox, packageJson, analysis.graph.files) : [];
    const plan = planTestCommand(environment.test.command, packageJson, members);
    const source = `\`${environment.test.command}\` from ${environment.test.source}`;
    if (plan.workspaces) return this.workspacePlan(plan, analysis, opts, source, context);
    const whole = wholeCommandPlan(plan, context);
    if (opts.scope === 'full') return { reason: `scope full: the repository's test command (${source})`, plans: [whole], whole: true };
    if (selection.mode === 'none') return { reason: selection.reason, plans: [], whole: false };
    if (selection.mode === 'full') return { reason: `${selection.reason}: the whole test command (${source})`, plans: [whole], whole: true };
    const selectable = selectableFiles(plan, selection.tests);
    if ('reason' in selectable) return { reason: `${selection.reason}; ${selectable.reason}: ran the whole command instead`, plans: [whole], whole: true };
    const left = selection.tests.length - selectable.files.length;
    const note = left > 0 ? ` (${left} selected file(s) are not run by it)` : '';
    const chosen = selectedPlan(plan, selectable.files.map((file) => ({ file })), context);
    return { reason: `${selection.reason}; passed to ${plan.runner} of ${source}${note}`, plans: [chosen], whole: false, fallback: [whole] };
  }

  /** A workspace command: each member's script in its directory; a selection goes to the members holding its files. */
  private workspacePlan(plan: TestPlan, analysis: Analysis, opts: RunTestsOptions, source: string, context: PlanContext): PlannedRuns {
    const { selection } = analysis;
    const members = plan.workspaces?.members ?? [];
    const whole = wholeWorkspacePlans(plan, context);
    const each = `${members.length} workspace package(s): ${members.map((member) => `${member.dir} (${member.plan.runner})`).join(', ')}`;
    if (opts.scope === 'full') return { reason: `scope full: the repository's test command (${source}) in ${each}`, plans: whole, whole: true };
    if (selection.mode === 'none') return { reason: selection.reason, plans: [], whole: false };
    if (selection.mode === 'full') return { reason: `${selection.reason}: the whole test command (${source}) in ${each}`, plans: whole, whole: true };
    const selected = selectedWorkspacePlans(plan, selection.tests, context);
    if ('reason' in selected) return { reason: `${selection.reason}; ${selected.reason}: ran the whole command instead`, plans: whole, whole: true };
    const note = selected.left > 0 ? ` (${selected.left} selected file(s) are not run by it)` : '';
    const where = selected.plans.map((chosen) => chosen.cwd).join(', ');
    return { reason: `${selection.reason}; passed to the runners of ${where} (${source})${note}`, plans: selected.plans, whole: false, fallback: whole };
  }

  private async detectedPlans(sandbox: Sandbox, analysis: Analysis, opts: RunTestsOptions): Promise<PlannedRuns> {
    const { graph, selection } = analysis;
    const python = this.checks.python;
    const jsRunner: TestRunner =
      this.checks.runner && this.checks.runner !== 'pytest' ? this.checks.runner : (detectJsRunner(await readText(sandbox, 'package.json')) ?? 'node-test');
    const hasJsTests = [...graph.tests].some((test) => !test.endsWith('.py'));
    const hasPyTests = [...graph.tests].some((test) => test.endsWith('.py'));
    if (opts.scope === 'full' && this.checks.preMerge) return { reason: 'scope full: the configured pre-merge command', plans: [customPlan(this.checks.preMerge)], whole: true };
    if (opts.scope === 'full' || selection.mode === 'full') {
      const plans: SuitePlan[] = [];
      if (hasJsTests) plans.push(detectedPlan(jsRunner, undefined, python));
      if (hasPyTests) plans.push(detectedPlan('pytest', undefined, python));
      return { reason: opts.scope === 'full' ? 'scope full: the whole suite' : selection.reason, plans, whole: true };
    }
    if (selection.mode === 'none') return { reason: selection.reason, plans: [], whole: false };
    const js = selection.tests.filter((test) => !test.endsWith('.py')).map((file) => ({ file }));
    const py = selection.tests.filter((test) => test.endsWith('.py')).map((file) => ({ file }));
    const plans: SuitePlan[] = [];
    if (js.length > 0) plans.push(detectedPlan(jsRunner, js, python));
    if (py.length > 0) plans.push(detectedPlan('pytest', py, python));
    return { reason: selection.reason, plans, whole: false };
  }

  reproducingTests(input: { ticket: { title: string; body?: string }; explicit?: readonly string[]; baseline?: BaselineResult }): ReproducingSelection {
    return selectReproducingTests(input);
  }

  /** Where this sandbox's baseline is kept: repository, recipe (test command included), base SHA. */
  baselineKey(sandbox: Sandbox): BaselineKey {
    const recipe = sandbox.environment ? createHash('sha256').update(JSON.stringify(sandbox.environment)).digest('hex').slice(0, 24) : 'detected';
    return { repo: this.options.repo, recipe, baseSha: sandbox.baseSha };
  }

  async baseline(sandbox: Sandbox, opts: { signal?: AbortSignal } = {}): Promise<BaselineResult | undefined> {
    const key = this.baselineKey(sandbox);
    const stored = await this.baselines.get(key);
    if (stored) return stored;
    // Only a workspace still at the base says what the base does.
    if ((await sandbox.diff()).trim() !== '') return undefined;
    const result = await this.runBaseline(sandbox, opts);
    if (!result.infrastructure) await this.baselines.put(key, result);
    return result;
  }

  /**
   * The full suite twice on the workspace as it is (the base, for a baseline). Tests whose
   * outcome differs between the two runs are quarantined as flaky; tests that fail in both are
   * the pre-existing failures. Nothing is stored here (`baseline` does that).
   */
  async runBaseline(sandbox: Sandbox, opts: { signal?: AbortSignal } = {}): Promise<BaselineResult> {
    const analysis = await this.analyze(sandbox);
    const planned = await this.plan(sandbox, analysis, { scope: 'full' });
    const context: SuiteContext = { files: analysis.graph.files, changed: [], timeoutSeconds: this.checks.timeoutSeconds ?? 600, ...(opts.signal ? { signal: opts.signal } : {}) };
    const command = planned.plans.map((plan) => plan.command).join(' && ') || '(nothing to run)';
    const runners = [...new Set(planned.plans.map((plan) => plan.runner))];
    const runner = runners.length === 1 && runners[0] !== 'custom' && runners[0] ? runners[0] : 'unknown';
    const rounds: SuiteRun[][] = [];
    let seconds = 0;
    for (let round = 0; round < 2; round++) {
      const roundStarted = Date.now();
      const runs: SuiteRun[] = [];
      for (const plan of planned.plans) runs.push(await runSuite(sandbox, plan, context));
      setApartStartFailures(runs);
      if (round === 0) seconds = (Date.now() - roundStarted) / 1000;
      const infrastructure = runs.find((run) => run.infrastructure)?.infrastructure;
      if (infrastructure && sandbox.environment && infrastructure.action === infrastructureAction()) infrastructure.action = infrastructureAction(sandbox.environment.test.source);
      if (infrastructure) return { command, runner, passed: 0, failed: 0, flaky: [], preExistingFailures: [], seconds, infrastructure };
      rounds.push(runs);
    }
    const outcomes = rounds.map((runs) => new Map(runs.flatMap((run) => run.cases).map((testCase) => [testCase.id, testCase.outcome])));
    const [first, second] = [outcomes[0] ?? new Map(), outcomes[1] ?? new Map()];
    const flaky = [...first.keys()].filter((id) => second.has(id) && first.get(id) !== second.get(id) && first.get(id) !== 'skipped' && second.get(id) !== 'skipped');
    const diffHash = await workspaceHash(sandbox, await readWorkspaceChanges(sandbox, sandbox.baseSha));
    const at = (this.options.now?.() ?? new Date()).toISOString();
    for (const id of flaky) {
      const observation = (outcome: string | undefined): FlakyObservation => ({ testId: id, diffHash, outcome: outcome === 'passed' ? 'passed' : 'failed', at });
      await this.flaky.quarantine(this.options.repo, id, [observation(first.get(id)), observation(second.get(id))]);
    }
    const both = (outcome: string) => [...first.keys()].filter((id) => first.get(id) === outcome && second.get(id) === outcome);
    const preExistingFailures = both('failed');
    // What a named reproducing test is matched against: the failures' files and the suite's ids.
    const firstCases = (rounds[0] ?? []).flatMap((run) => run.cases);
    const failureFiles: Record<string, string> = {};
    for (const testCase of firstCases) if (testCase.file && preExistingFailures.includes(testCase.id)) failureFiles[testCase.id] = testCase.file;
    const testIds = [...first.keys()].slice(0, MAX_BASELINE_IDS);
    const testFiles = [...new Set(firstCases.flatMap((testCase) => (testCase.file ? [testCase.file] : [])))];
    // Where the plan's runner is unknown (a wrapper, a chain), the runners whose reports were counted.
    const reportedBy = [...new Set((rounds[0] ?? []).flatMap((run) => run.reportedBy ?? []))];
    const steps = (rounds[0] ?? []).flatMap((run) => run.steps);
    judgeBaseSteps(steps);
    return { command, runner, ...(reportedBy.length > 0 ? { reportedBy } : {}), passed: both('passed').length, failed: preExistingFailures.length, ...ranOf(rounds[0] ?? []), steps, flaky, preExistingFailures, failureFiles, testIds, testFiles, seconds };
  }

  /**
   * Reruns failing tests once (not quarantined, not failing at the base already). A test that
   * fails and then passes while the workspace hash (`workspaceHash`) stays the same is flaky: quarantined
   * with both observations as evidence.
   */
  private async rerunFailures(
    sandbox: Sandbox,
    runs: SuiteRun[],
    quarantinedIds: Set<string>,
    preExistingIds: Set<string>,
    diffBefore: string,
    context: SuiteContext,
  ): Promise<string[]> {
    const notes: string[] = [];
    const maxRerun = this.options.maxRerun ?? 20;
    for (const run of runs) {
      const narrow = run.plan.narrow;
      if (!narrow || run.plan.runner === 'custom' || run.plan.runner === 'unknown') continue;
      const runner = run.plan.runner;
      const failing = run.cases.filter((testCase) => testCase.outcome === 'failed' && !quarantinedIds.has(testCase.id) && !preExistingIds.has(testCase.id) && testCase.file);
      if (failing.length === 0) continue;
      if (failing.length > maxRerun) {
        notes.push(`${failing.length} failing tests: more than ${maxRerun}, not rerun`);
        continue;
      }
      const rerun = await runSuite(sandbox, narrow(rerunTargets(runner, failing)), context);
      const diffAfter = await workspaceHash(sandbox, await readWorkspaceChanges(sandbox, sandbox.baseSha));
      if (diffAfter !== diffBefore) {
        notes.push('workspace changed during the run: no flakiness judged');
        continue;
      }
      const passedNow = new Set(rerun.cases.filter((testCase) => testCase.outcome === 'passed').map((testCase) => testCase.id));
      const at = (this.options.now?.() ?? new Date()).toISOString();
      let flakyCount = 0;
      for (const testCase of failing) {
        if (!passedNow.has(testCase.id)) continue;
        const evidence: FlakyObservation[] = [
          { testId: testCase.id, diffHash: diffBefore, outcome: 'failed', at },
          { testId: testCase.id, diffHash: diffAfter, outcome: 'passed', at },
        ];
        await this.flaky.quarantine(this.options.repo, testCase.id, evidence);
        quarantinedIds.add(testCase.id);
        testCase.message = `flaky: failed, then passed on rerun of the same code (quarantined). ${testCase.message ?? ''}`.trim();
        flakyCount++;
      }
      notes.push(`reran ${failing.length} failing test(s) once: ${flakyCount} passed (quarantined as flaky), ${failing.length - flakyCount} failed again`);
    }
    return notes;
  }

  async diagnostics(sandbox: Sandbox, opts: { paths?: string[]; signal?: AbortSignal } = {}): Promise<Diagnostic[]> {
    const analysis = await this.analyze(sandbox);
    const files = opts.paths ?? analysis.changes.changed;
    if (files.length === 0) return [];
    const relevant = new Set(files);
    // Direct importers: where a changed signature shows up as a type error.
    for (const [from, targets] of analysis.graph.raw) if (files.some((file) => targets.has(file))) relevant.add(from);
    const detected = await detectCheckers(sandbox);
    const wanted = this.checks.linters;
    const checkers = wanted ? detected.filter((checker) => wanted.includes(checker)) : detected;
    return runCheckers(sandbox, checkers, files, relevant, opts.signal);
  }
}

/** Test ids a baseline keeps (a large suite's ids are only for telling a named test that does not exist). */
const MAX_BASELINE_IDS = 20_000;

function rerunTargets(runner: TestRunner, failing: TestCaseResult[]): TestTarget[] {
  const byFile = new Map<string, string[]>();
  for (const testCase of failing) {
    const file = testCase.file ?? '';
    const name = runner === 'pytest' ? testCase.id : (testCase.id.split(' > ').pop() ?? testCase.id);
    byFile.set(file, [...(byFile.get(file) ?? []), name]);
  }
  return [...byFile].map(([file, names]) => ({ file, names }));
}

/** The workspace packages the root names (package.json `workspaces`, pnpm-workspace.yaml), with their package.json. */
async function workspaceMembers(sandbox: Sandbox, packageJson: string | undefined, files: Set<string>): Promise<WorkspaceMember[]> {
  const pnpmWorkspace = files.has('pnpm-workspace.yaml') ? await readText(sandbox, 'pnpm-workspace.yaml') : undefined;
  const dirs = workspaceDirs(workspaceGlobs(packageJson, pnpmWorkspace), files);
  return Promise.all(dirs.map(async (dir) => ({ dir, packageJson: await readText(sandbox, `${dir}/package.json`) })));
}

async function readText(sandbox: Sandbox, path: string): Promise<string | undefined> {
  try {
    return (await sandbox.readFile(path)).toString('utf8');
  } catch {
    return undefined;
  }
}

export interface RunBaselineOptions {
  /** Repository identity for the quarantine and the store (default: the recipe's repo). */
  repo?: string;
  flakyStore?: FlakyStore;
  /** When given, the result is kept there for the tasks that follow (not when it is an infrastructure result). */
  baselineStore?: BaselineStore;
  signal?: AbortSignal;
  timeoutSeconds?: number;
}

/**
 * The readiness report's "tests at base": runs the sandbox's full test command twice on the
 * workspace as it is (a fresh sandbox is at its base SHA) and reports passed / failed / flaky /
 * pre-existing failures / time, or the infrastructure result when the runner cannot run.
 */
export async function runBaseline(sandbox: Sandbox, options: RunBaselineOptions = {}): Promise<BaselineResult> {
  const engine = new SmartFeedbackEngine({
    repo: options.repo ?? sandbox.environment?.repo ?? 'unknown',
    ...(options.flakyStore ? { flakyStore: options.flakyStore } : {}),
    ...(options.baselineStore ? { baselineStore: options.baselineStore } : {}),
    ...(options.timeoutSeconds ? { checks: { timeoutSeconds: options.timeoutSeconds } } : {}),
  });
  const result = await engine.runBaseline(sandbox, options.signal ? { signal: options.signal } : {});
  if (options.baselineStore && !result.infrastructure) await options.baselineStore.put(engine.baselineKey(sandbox), result);
  return result;
}
