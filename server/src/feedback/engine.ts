import type { Sandbox } from '../sandbox/types';
import { detectCheckers, runCheckers } from './checks';
import { InMemoryFlakyStore } from './flaky';
import { buildGraph, GraphCache, overlayChanges, type ImpactGraph } from './graph';
import { detectJsRunner, parseTestOutput, testCommand, type TestTarget } from './runners';
import { selectTests, type Selection } from './selection';
import { readBaseSnapshot, readWorkspaceChanges, workspaceDiffHash, type WorkspaceChanges } from './snapshot';
import type { ChecksConfig, Diagnostic, FeedbackEngine, FlakyObservation, FlakyStore, TestCaseResult, TestReport, TestRunner } from './types';

export interface SmartFeedbackEngineOptions {
  /** Repo identity for the graph cache and the flaky quarantine (e.g. `github.com/acme/shop`). */
  repo: string;
  checks?: ChecksConfig;
  flakyStore?: FlakyStore;
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

interface SuiteRun {
  runner: TestRunner | 'custom';
  command: string;
  cases: TestCaseResult[];
  failures: string[];
  exitCode: number;
  timedOut: boolean;
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

  constructor(private readonly options: SmartFeedbackEngineOptions) {
    this.cache = options.cache ?? new GraphCache();
    this.flaky = options.flakyStore ?? new InMemoryFlakyStore();
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

  async runTests(sandbox: Sandbox, opts: { scope: 'selected' | 'full'; signal?: AbortSignal }): Promise<TestReport> {
    const started = Date.now();
    const analysis = await this.analyze(sandbox);
    const { graph, selection } = analysis;
    const jsRunner: TestRunner =
      this.checks.runner && this.checks.runner !== 'pytest' ? this.checks.runner : (detectJsRunner(await readText(sandbox, 'package.json')) ?? 'node-test');
    const hasJsTests = [...graph.tests].some((test) => !test.endsWith('.py'));
    const hasPyTests = [...graph.tests].some((test) => test.endsWith('.py'));

    let reason: string;
    const plans: Array<{ runner: TestRunner | 'custom'; command: string }> = [];
    if (opts.scope === 'full' && this.checks.preMerge) {
      reason = 'scope full: the configured pre-merge command';
      plans.push({ runner: 'custom', command: this.checks.preMerge });
    } else if (opts.scope === 'full' || selection.mode === 'full') {
      reason = opts.scope === 'full' ? 'scope full: the whole suite' : selection.reason;
      if (hasJsTests) plans.push({ runner: jsRunner, command: testCommand(jsRunner, undefined, this.commandOptions()) });
      if (hasPyTests) plans.push({ runner: 'pytest', command: testCommand('pytest', undefined, this.commandOptions()) });
    } else {
      reason = selection.reason;
      if (selection.mode === 'selected') {
        const js = selection.tests.filter((test) => !test.endsWith('.py')).map((file) => ({ file }));
        const py = selection.tests.filter((test) => test.endsWith('.py')).map((file) => ({ file }));
        if (js.length > 0) plans.push({ runner: jsRunner, command: testCommand(jsRunner, js, this.commandOptions()) });
        if (py.length > 0) plans.push({ runner: 'pytest', command: testCommand('pytest', py, this.commandOptions()) });
      }
    }

    const diffBefore = await workspaceDiffHash(sandbox);
    const runs: SuiteRun[] = [];
    for (const plan of plans) runs.push(await this.runSuite(sandbox, plan.runner, plan.command, graph.files, opts.signal));

    const quarantinedIds = new Set((await this.flaky.list(this.options.repo)).map((test) => test.testId));
    const rerunNotes = await this.rerunFailures(sandbox, runs, quarantinedIds, diffBefore, graph.files, opts.signal);

    const cases = runs.flatMap((run) => run.cases);
    const deciding = cases.filter((testCase) => !quarantinedIds.has(testCase.id));
    const failed = deciding.filter((testCase) => testCase.outcome === 'failed').length;
    const passed = cases.filter((testCase) => testCase.outcome === 'passed').length;
    const skipped = cases.filter((testCase) => testCase.outcome === 'skipped').length;
    const quarantined = [...new Set(cases.filter((testCase) => quarantinedIds.has(testCase.id)).map((testCase) => testCase.id))];
    const command = runs.map((run) => run.command).join(' && ') || '(nothing to run)';
    const report: TestReport = {
      command,
      scope: opts.scope,
      selectionReason: reason,
      passed,
      failed,
      skipped,
      ok: failed === 0,
      quarantined,
      output: '',
      durationMs: Date.now() - started,
      cases,
    };
    report.output = this.compactOutput(report, runs, quarantinedIds, rerunNotes);
    return report;
  }

  private commandOptions(): { python?: string } {
    return this.checks.python ? { python: this.checks.python } : {};
  }

  private async runSuite(sandbox: Sandbox, runner: TestRunner | 'custom', command: string, files: Set<string>, signal?: AbortSignal): Promise<SuiteRun> {
    const exec: Parameters<Sandbox['exec']>[0] = {
      cmd: ['bash', '-c', command],
      // No bytecode or pytest cache files: the run must not change the workspace diff.
      env: { PYTHONDONTWRITEBYTECODE: '1', CI: '1', NO_COLOR: '1', FORCE_COLOR: '0' },
      timeoutMs: (this.checks.timeoutSeconds ?? 600) * 1000,
      outputCapBytes: 4 * 1024 * 1024,
    };
    if (signal) exec.signal = signal;
    const result = await sandbox.exec(exec);
    const parsed = runner === 'custom' ? { cases: [], failures: [] } : parseTestOutput(runner, result.stdout, files);
    const run: SuiteRun = { runner, command, cases: parsed.cases, failures: parsed.failures, exitCode: result.exitCode, timedOut: result.timedOut };
    // A red exit with no failing test parsed (crash, collection error, timeout) is still red.
    if (result.exitCode !== 0 && !parsed.cases.some((testCase) => testCase.outcome === 'failed')) {
      const tail = `${result.stdout}\n${result.stderr}`.trim().slice(-3000);
      const why = result.timedOut ? 'timed out' : `exited with ${result.exitCode}`;
      run.cases.push({ id: `${command} (${why})`, outcome: 'failed', message: why });
      run.failures.push(`✗ ${command} ${why}\n${tail}`);
    }
    return run;
  }

  /**
   * Reruns failing, not yet quarantined tests once. A test that fails and then passes while the
   * workspace diff hash stays the same is flaky: quarantined with both observations as evidence.
   */
  private async rerunFailures(
    sandbox: Sandbox,
    runs: SuiteRun[],
    quarantinedIds: Set<string>,
    diffBefore: string,
    files: Set<string>,
    signal?: AbortSignal,
  ): Promise<string[]> {
    const notes: string[] = [];
    const maxRerun = this.options.maxRerun ?? 20;
    for (const run of runs) {
      if (run.runner === 'custom') continue;
      const failing = run.cases.filter((testCase) => testCase.outcome === 'failed' && !quarantinedIds.has(testCase.id) && testCase.file);
      if (failing.length === 0) continue;
      if (failing.length > maxRerun) {
        notes.push(`${failing.length} failing tests: more than ${maxRerun}, not rerun`);
        continue;
      }
      const targets = rerunTargets(run.runner, failing);
      const rerun = await this.runSuite(sandbox, run.runner, testCommand(run.runner, targets, this.commandOptions()), files, signal);
      const diffAfter = await workspaceDiffHash(sandbox);
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

  private compactOutput(report: TestReport, runs: SuiteRun[], quarantinedIds: Set<string>, notes: string[]): string {
    const cap = this.options.outputCapChars ?? 8000;
    const head = [
      `${report.ok ? 'PASS' : 'FAIL'}: ${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped (${report.scope}; ${report.selectionReason})`,
      ...notes,
    ];
    if (report.quarantined.length > 0) head.push(`quarantined (not deciding): ${report.quarantined.join(', ')}`);
    const failures = runs.flatMap((run) => run.failures).filter((failure) => ![...quarantinedIds].some((id) => failure.startsWith(`✗ ${id}\n`)));
    let output = head.join('\n');
    for (const failure of failures) {
      const piece = `\n\n${failure.slice(0, 1500)}`;
      if (output.length + piece.length > cap) {
        output += `\n\n… ${failures.length - failures.indexOf(failure)} more failure(s) not shown`;
        break;
      }
      output += piece;
    }
    return output;
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

function rerunTargets(runner: TestRunner, failing: TestCaseResult[]): TestTarget[] {
  const byFile = new Map<string, string[]>();
  for (const testCase of failing) {
    const file = testCase.file ?? '';
    const name = runner === 'pytest' ? testCase.id : (testCase.id.split(' > ').pop() ?? testCase.id);
    byFile.set(file, [...(byFile.get(file) ?? []), name]);
  }
  return [...byFile].map(([file, names]) => ({ file, names }));
}

async function readText(sandbox: Sandbox, path: string): Promise<string | undefined> {
  try {
    return (await sandbox.readFile(path)).toString('utf8');
  } catch {
    return undefined;
  }
}
