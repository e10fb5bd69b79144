import type { ReadinessCheckStatus, ReadinessReport, RepoRegistration } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { baseJudgedBy } from '../feedback/judgement';
import { describeSteps, passedByExitStatus } from '../feedback/step-summary';
import type { FeedbackEngine, TestStepOutcome } from '../feedback/types';
import type { Logger } from '../log';
import type { Sandbox } from '../sandbox/types';
import type { SnapshotProgress } from '../sandbox/snapshot-build';
import type { SandboxProvider } from './ports';
import type { RepoRegistry } from './registry';

/*
 * `dockhand repo check <repo>` / `POST /v1/repos/:name/check`: what a person deciding whether to
 * roll Dockhand out on a repository needs, measured on the real thing. It builds (or finds) the
 * repository's snapshot through the sandbox service, starts a sandbox from it, runs the full
 * suite at the base (the feedback engine's baseline when it has one, else one full run), builds
 * the test-impact graph, and lists everything that blocks, each with what to do.
 *
 * It runs for minutes (a cold snapshot build, the suite), so the route answers 202 and the status
 * is polled (`GET /v1/repos/:name/check`); one check per repository at a time, the last result
 * kept in memory (a restart forgets it; the snapshot it built stays).
 */

/** The feedback engine with the selection graph (`SmartFeedbackEngine.analyze`). */
export type ReadinessEngine = FeedbackEngine & {
  analyze?(sandbox: Sandbox): Promise<{ graph: { files: Set<string>; tests: Set<string> } }>;
};

export interface ReadinessOptions {
  registry: RepoRegistry;
  sandboxes: SandboxProvider;
  feedback: (repo: string) => ReadinessEngine;
  logger?: Logger;
}

type Progress = ReadinessCheckStatus['progress'][number];

/**
 * What in the tests at the base blocks a rollout: a runner that cannot run, a command that runs no
 * test, or one in which no test passes (every result is a failure at the base, the whole command's
 * exit status included): then no change can be verified, whatever the agent does.
 */
export function testBlockers(report: ReadinessReport, infrastructure: string | undefined, steps?: readonly TestStepOutcome[]): void {
  // A step counted by its exit status that passes at the base still judges a change (feedback/step-summary.ts).
  const byExitStatus = infrastructure ? [] : passedByExitStatus(steps);
  report.tests.judgedBy = baseJudgedBy(steps, report.tests.passed + report.tests.failed, byExitStatus, infrastructure !== undefined);
  if (byExitStatus.length > 0 && report.tests.passed === 0) {
    report.tests.ok = true;
    report.tests.detail += ` — counted by exit status: ${byExitStatus.map((step) => step.name).join('; ')}`;
    return;
  }
  if (infrastructure) {
    report.tests.action = 'make the test command runnable in the sandbox (testCommand in .dockhand/environment.yml or .dockhand/policy.yml)';
    report.blocking.push({ problem: infrastructure, action: report.tests.action });
  } else if (report.tests.passed + report.tests.failed === 0) {
    report.tests.action = 'add tests, or name the test command in .dockhand/environment.yml';
    report.blocking.push({ problem: `the test command (${report.tests.command ?? 'detected'}) ran no test`, action: report.tests.action });
  } else if (report.tests.passed === 0) {
    report.tests.ok = false;
    report.tests.action = noTestPassesAction(report.environment);
    // What the failing steps printed last says why (typanion's mocha step: "exited with 128", and nothing else).
    const said = (steps ?? []).filter((step) => step.exitCode !== 0 && step.tail).slice(0, 2).map((step) => `\n${step.name} printed last:\n${step.tail}`).join('');
    report.blocking.push({ problem: `no test passes at the base: ${report.tests.failed} failed (${report.tests.preExistingFailures.slice(0, 3).join('; ')}), so no change can be verified${said}`, action: report.tests.action });
  }
}

/**
 * What to do when no test passes at the base, for the repository's kind: its Python packages for a
 * Python repository (never its Node version), the Node line for a JavaScript one; where the
 * command is the CI's, which workflow step it follows.
 */
export function noTestPassesAction(environment: ReadinessReport['environment']): string {
  const followed = environment?.test.steps ? ` (${environment.test.source})` : '';
  if (environment?.python && !environment.node) {
    return `run the tests as the repository's CI does${followed}: install what they import into the .venv (install: in .dockhand/environment.yml, e.g. \`python3 -m venv --system-site-packages .venv && .venv/bin/pip install -e .[test]\`) or name a test command that passes at the base (test: there)`;
  }
  return `run the tests as the repository's CI does${followed}: pin its Node version (node: in .dockhand/environment.yml) or name a test command that passes at the base (test: there)`;
}

export class ReadinessChecks {
  private readonly checks = new Map<string, ReadinessCheckStatus>();
  private readonly running = new Map<string, AbortController>();

  constructor(private readonly options: ReadinessOptions) {}

  status(repo: string): ReadinessCheckStatus | undefined {
    return this.checks.get(repo);
  }

  /** Starts a check (or answers the running one). Resolves once the commit is known. */
  async start(registration: RepoRegistration, sha?: string): Promise<ReadinessCheckStatus> {
    const current = this.checks.get(registration.name);
    if (current?.state === 'running') return current;
    const controller = new AbortController();
    const { signal } = controller;
    let commit = sha;
    let head: ReadinessCheckStatus['head'];
    if (commit === undefined) {
      // The source's default branch as it is now, fetched first, and said in the status.
      const found = await this.options.registry.sourceHead(registration, { signal });
      commit = found.sha;
      head = { branch: found.branch, source: found.source };
    } else {
      await this.options.registry.ensureCommit(registration, commit, { signal });
    }
    const status: ReadinessCheckStatus = {
      repo: registration.name,
      sha: commit,
      ...(head ? { head } : {}),
      state: 'running',
      startedAt: new Date().toISOString(),
      progress: [],
    };
    this.checks.set(registration.name, status);
    this.running.set(registration.name, controller);
    void this.run(registration, status, controller.signal)
      .then((report) => Object.assign(status, { state: 'done', report }))
      .catch((error: unknown) => {
        const failure = error instanceof DockhandError ? error : new DockhandError('internal', error instanceof Error ? error.message : String(error));
        this.options.logger?.warn({ repo: registration.name, err: error }, 'readiness check failed');
        Object.assign(status, { state: 'failed', error: { code: failure.code, message: failure.message } });
      })
      .finally(() => {
        status.finishedAt = new Date().toISOString();
        this.running.delete(registration.name);
      });
    return status;
  }

  /** Stops running checks (server shutdown). */
  close(): void {
    for (const controller of this.running.values()) controller.abort();
  }

  private async run(registration: RepoRegistration, status: ReadinessCheckStatus, signal: AbortSignal): Promise<ReadinessReport> {
    const started = Date.now();
    const note = (stage: string, line?: string) => {
      const entry: Progress = { stage, elapsedMs: Date.now() - started, ...(line ? { line: line.slice(0, 2000) } : {}) };
      status.progress.push(entry);
      // A chatty install must not grow the status without bound: the first entry and the latest stay.
      if (status.progress.length > 400) status.progress.splice(1, status.progress.length - 400);
    };
    const blocking: ReadinessReport['blocking'] = [];
    const report: ReadinessReport = {
      repo: registration.name,
      sha: status.sha,
      ...(status.head ? { head: status.head } : {}),
      ready: false,
      install: { ok: false, detail: 'not run' },
      tests: { ok: false, detail: 'not run', passed: 0, failed: 0, flaky: [], preExistingFailures: [] },
      selection: { ok: false, detail: 'not run' },
      blocking,
    };
    const { sandboxes } = this.options;
    const taskId = `readiness-${registration.name.replace(/[^A-Za-z0-9_.-]/g, '-')}-${Date.now()}`;
    note('snapshot', 'building or finding the snapshot');
    let acquired;
    try {
      // The build's own stages (toolchain, install, setup, …) show in the status as they happen.
      const onProgress = (progress: SnapshotProgress) => {
        // The detected environment is kept from here: a build that fails later still reports it.
        if (progress.environment) report.environment = progress.environment;
        note(`snapshot ${progress.stage}`, progress.line);
      };
      acquired = await sandboxes.acquire({ repo: registration.name, baseSha: status.sha, taskId, signal, onProgress });
    } catch (error) {
      const failure = error instanceof DockhandError ? error : undefined;
      const message = error instanceof Error ? error.message : String(error);
      report.install = { ok: false, detail: message, action: failure?.hint ?? 'fix the install (see .dockhand/environment.yml and .dockhand/setup.sh) and check again' };
      blocking.push({ problem: `the snapshot could not be built: ${message}`, action: report.install.action ?? '' });
      note('snapshot', `failed: ${message}`);
      return report;
    }
    let sandbox = acquired.sandbox;
    try {
      const built = acquired.source === 'cold';
      const buildSeconds = built ? acquired.startMs / 1000 : undefined;
      note('snapshot', built ? `built in ${(acquired.startMs / 1000).toFixed(1)} s` : `found (${acquired.source})`);
      let startSeconds = built ? undefined : acquired.startMs / 1000;
      if (built) {
        // The figure that matters for every later task: a sandbox started from the snapshot.
        await sandboxes.release(sandbox);
        const again = await sandboxes.acquire({ repo: registration.name, baseSha: status.sha, taskId: `${taskId}-start`, signal });
        sandbox = again.sandbox;
        startSeconds = again.startMs / 1000;
      }
      note('start', `sandbox started from the snapshot in ${(startSeconds ?? 0).toFixed(2)} s`);
      const environment = sandbox.environment;
      if (environment) report.environment = environment;
      report.snapshot = {
        image: acquired.snapshotImage ?? sandbox.image,
        built,
        ...(buildSeconds !== undefined ? { buildSeconds } : {}),
        ...(startSeconds !== undefined ? { startSeconds } : {}),
      };
      report.install = {
        ok: true,
        detail: environment ? `${environment.install.command} (from ${environment.install.source})` : 'the default install',
        ...(buildSeconds !== undefined ? { seconds: buildSeconds } : {}),
      };
      const engine = this.options.feedback(registration.name);
      note('tests', 'running the full suite at the base commit');
      await this.baseline(engine, sandbox, signal, report);
      note('tests', report.tests.detail);
      note('selection', 'building the test-impact graph');
      await this.selection(engine, sandbox, report);
      note('selection', report.selection.detail);
    } finally {
      await sandboxes.release(sandbox).catch(() => undefined);
    }
    report.ready = blocking.length === 0;
    return report;
  }

  private async baseline(engine: ReadinessEngine, sandbox: Sandbox, signal: AbortSignal, report: ReadinessReport): Promise<void> {
    const started = Date.now();
    if (engine.baseline) {
      const baseline = await engine.baseline(sandbox, { signal });
      if (baseline) {
        report.tests = {
          ok: !baseline.infrastructure && baseline.passed + baseline.failed > 0,
          detail: baseline.infrastructure
            ? baseline.infrastructure.message
            : `${baseline.passed} passed, ${baseline.failed} failed, ${baseline.flaky.length} flaky in ${baseline.seconds.toFixed(1)} s (two runs at the base)${baseline.steps && baseline.steps.length > 1 ? `; steps: ${describeSteps(baseline.steps)}` : ''}`,
          command: baseline.command,
          // A wrapper or a chain has no one runner of its own; the runners that reported are named (jest through `npm test`).
          runner: baseline.runner === 'unknown' && baseline.reportedBy?.length ? baseline.reportedBy.join(', ') : baseline.runner,
          passed: baseline.passed,
          failed: baseline.failed,
          flaky: baseline.flaky,
          preExistingFailures: baseline.preExistingFailures,
          seconds: baseline.seconds,
        };
        testBlockers(report, baseline.infrastructure?.message, baseline.steps);
        return;
      }
    }
    const run = await engine.runTests(sandbox, { scope: 'full', signal });
    const failing = run.cases.filter((test) => test.outcome === 'failed').map((test) => test.id);
    report.tests = {
      ok: !run.infrastructure && run.passed + run.failed > 0,
      detail: run.infrastructure ? run.infrastructure.message : `${run.passed} passed, ${run.failed} failed in ${(run.durationMs / 1000).toFixed(1)} s (one full run)${run.steps && run.steps.length > 1 ? `; steps: ${describeSteps(run.steps)}` : ''}`,
      command: run.command,
      ...(run.runner ? { runner: run.runner } : {}),
      passed: run.passed,
      failed: run.failed,
      flaky: run.quarantined,
      preExistingFailures: failing,
      seconds: (Date.now() - started) / 1000,
    };
    testBlockers(report, run.infrastructure?.message, run.steps);
  }

  private async selection(engine: ReadinessEngine, sandbox: Sandbox, report: ReadinessReport): Promise<void> {
    if (!engine.analyze) {
      report.selection = { ok: false, detail: 'this feedback engine builds no selection graph; every run is the full suite', action: 'none needed' };
      return;
    }
    try {
      const { graph } = await engine.analyze(sandbox);
      const testFiles = graph.tests.size;
      const sourceFiles = graph.files.size - testFiles;
      report.selection = testFiles > 0
        ? { ok: true, detail: `${testFiles} test files and ${sourceFiles} source files in the import graph`, testFiles, sourceFiles }
        : { ok: false, detail: `no test file found among ${graph.files.size} files: every run is the whole command`, testFiles, sourceFiles, action: 'none needed unless runs are slow' };
    } catch (error) {
      report.selection = { ok: false, detail: `the graph could not be built: ${error instanceof Error ? error.message : String(error)}`, action: 'runs fall back to the full suite' };
    }
  }
}
