import type { Sandbox } from '../sandbox/types';

export interface TestCaseResult {
  id: string;
  file?: string;
  outcome: 'passed' | 'failed' | 'skipped';
  message?: string;
  /**
   * A case that is not one test: `load_error`, a test file that failed to load or collect (pytest's
   * collection `ERROR file`, jest's suite that failed to load): none of its tests ran;
   * `exit_status`, a command's red exit that no report explains. Absent: a test the runner ran.
   */
  kind?: 'load_error' | 'exit_status';
}

export interface TestReport {
  command: string;
  scope: 'selected' | 'full';
  /** Why this selection (e.g. "3 test files import src/paginate.ts" or "package.json changed: full suite"). */
  selectionReason: string;
  passed: number;
  failed: number;
  skipped: number;
  /**
   * Tests the runners ran (passed or failed; not skipped, not a `kind` case). Absent when a run's
   * command gives no count (a command Dockhand does not know that printed no TAP).
   */
  ran?: number;
  /** Each step of the command as it ran (how it was counted, what it counted, how it judges). */
  steps?: TestStepOutcome[];
  /**
   * false: no step of this run can judge the change (every step was counted by an exit status
   * that failed at the base, or counted no test): green or red, it verifies nothing (judgement.ts).
   */
  judged?: boolean;
  /** Green/red as the agent and the verified stop should treat it (quarantined tests excluded). */
  ok: boolean;
  quarantined: string[];
  /** Compact output for the model: summary plus failing tests' output. */
  output: string;
  durationMs: number;
  cases: TestCaseResult[];
  /** The runner whose report the counts come from ('unknown': the command's exit status only). */
  runner?: TestRunner | 'unknown';
  /** The repository's whole test command ran (not a selection of files). */
  wholeCommand?: boolean;
  /**
   * Failing tests that already fail at the base commit (the baseline): listed, never deciding
   * `ok` — except the task's reproducing tests, which are not listed here and do decide.
   */
  preExisting?: string[];
  /** The task's reproducing tests (`RunTestsOptions.reproducing`) and how each did in this run. */
  reproducing?: ReproducingOutcome[];
  /**
   * The runner itself failed (missing, could not start, crashed, timed out, gave no report): not a
   * red test. `ok` is false, no case is counted for it, and the agent is not asked to fix it.
   */
  infrastructure?: TestInfrastructure;
}

/** A reproducing test (a test id, name or file, see reproducing.ts) in one run. */
export interface ReproducingOutcome {
  id: string;
  /** not_run: no case of this run is that test (a selection without it, or a command that runs no tests). */
  outcome: 'passed' | 'failed' | 'not_run';
}

export type InfrastructureKind = 'missing' | 'start' | 'crash' | 'timeout' | 'no_report' | 'no_tests';

export interface TestInfrastructure {
  kind: InfrastructureKind;
  /** What happened, starting "the test runner …" ("could not start", "crashed", "timed out", "gave no report"). */
  message: string;
  /** What a user can do about it (the test command's source, `.dockhand/environment.yml`, `dockhand repo check`). */
  action: string;
  command: string;
  /** The runner's output tail. */
  output: string;
}

export interface Diagnostic {
  tool: string;
  path: string;
  line: number;
  column?: number;
  severity: 'error' | 'warning';
  message: string;
}

export interface RunTestsOptions {
  scope: 'selected' | 'full';
  signal?: AbortSignal;
  /** The run before a PR: the recipe's pre-PR command when it has one (scope 'full'). */
  prePr?: boolean;
  /**
   * The task's reproducing tests (ids, names or files): failing at the base like pre-existing
   * failures, but the ticket is about them, so they must pass: a failing one makes the run red.
   */
  reproducing?: readonly string[];
}

/** The feedback engine the run_tests tool and the verified stop use. */
export interface FeedbackEngine {
  runTests(sandbox: Sandbox, opts: RunTestsOptions): Promise<TestReport>;
  diagnostics(sandbox: Sandbox, opts?: { paths?: string[] }): Promise<Diagnostic[]>;
  /**
   * The full suite at the base commit (run twice to spot flakes), kept per (repository, recipe,
   * base SHA). Called by the loop before the agent's first turn, while the workspace is still at
   * the base; undefined when it cannot be known (the workspace already has changes and none is kept).
   */
  baseline?(sandbox: Sandbox, opts?: { signal?: AbortSignal }): Promise<BaselineResult | undefined>;
  /**
   * The task's reproducing tests: its explicit ones and the baseline failures its ticket names
   * (reproducing.ts). Without this method a task's explicit tests are its reproducing tests.
   */
  reproducingTests?(input: { ticket: { title: string; body?: string }; explicit?: readonly string[]; baseline?: BaselineResult }): ReproducingSelection;
}

export interface ReproducingSelection {
  /** What must pass: explicit queries as given, and the ids of baseline failures the ticket names. */
  tests: string[];
  /** Per test, where it came from. */
  from: Record<string, 'explicit' | 'ticket'>;
  /** Explicit queries that match no test of the suite at the base (checked if they ever run). */
  unknown: string[];
}

/**
 * One step of the test command (a part of its `&&` chain, or one of the recipe's `test.steps`) as
 * it ran: counted per test through a runner's report ('tests') or by its exit status alone.
 */
export interface TestStepOutcome {
  name: string;
  exitCode: number;
  counted: 'tests' | 'exit status';
  passed: number;
  failed: number;
  /** A step that failed by its exit status: the last lines it printed (what the readiness check shows of why). */
  tail?: string;
  /**
   * The step as written (`jest`, `tsd`): the same for the whole command and for a selection of
   * its runner step, whose `name` is the command that ran (with the selected files).
   */
  key?: string;
  /**
   * How this step judges the change (judgement.ts): 'tests' per test; 'exit status' by an exit
   * status that passed at the base; 'cannot judge' by an exit status that failed at the base —
   * neither a reason to refuse finishing nor evidence that the change works.
   */
  judgement?: 'tests' | 'exit status' | 'cannot judge';
}

/** What `runBaseline` reports (also the readiness report's "tests at base"). */
export interface BaselineResult {
  command: string;
  runner: TestRunner | 'unknown';
  /** The runners whose reports were counted (the side channel's, the plan's own), where known. */
  reportedBy?: string[];
  passed: number;
  failed: number;
  /** Tests the first run ran (`TestReport.ran`); absent when the command gives no count (and in baselines stored before it). */
  ran?: number;
  /** Each step of the first run, in order: a step that failed here is pre-existing, the later ones still ran. */
  steps?: TestStepOutcome[];
  /** Tests whose outcome differed between the two runs (quarantined). */
  flaky: string[];
  /** Tests that failed in both runs: pre-existing, not the agent's to fix. */
  preExistingFailures: string[];
  /** The file of each pre-existing failure the runner named one for (reproducing tests are matched by file too). */
  failureFiles?: Record<string, string>;
  /** Every test id of the suite at the base (to tell a named reproducing test that does not exist). */
  testIds?: string[];
  /** The suite's test files the runner reported. */
  testFiles?: string[];
  seconds: number;
  infrastructure?: TestInfrastructure;
}

export interface BaselineKey {
  repo: string;
  /** Hash of the environment recipe (test command included); 'detected' without one. */
  recipe: string;
  baseSha: string;
}

/** Where baselines are kept: `InMemoryBaselineStore` (baseline.ts) and `SqliteBaselineStore` (store/baselines.ts). */
export interface BaselineStore {
  get(key: BaselineKey): Promise<BaselineResult | undefined>;
  put(key: BaselineKey, result: BaselineResult): Promise<void>;
}

/** The test runners Dockhand reads (the stored baselines' schema takes this list too). */
export const TEST_RUNNERS = ['node-test', 'vitest', 'jest', 'mocha', 'tape', 'ava', 'uvu', 'tap', 'pytest'] as const;
/** Which test runner a suite uses; decides the command and the result parser. */
export type TestRunner = (typeof TEST_RUNNERS)[number];

/**
 * The repo's checks as `.dockhand/policy.yml` key `checks` describes them (the policy module owns
 * that file's schema and passes the parsed value in). Every field is optional: anything left out
 * is detected from the snapshot.
 */
export interface ChecksConfig {
  /** Command for scope 'full' (the pre-PR command), e.g. `npm test`. Default: the detected full suite. */
  preMerge?: string;
  /** Force a runner instead of detecting it. */
  runner?: TestRunner;
  /** Checkers to run; default: every one detected in the snapshot. */
  linters?: Array<'tsc' | 'eslint' | 'ruff' | 'flake8' | 'pyflakes' | 'py_compile' | 'node_check' | 'go_vet'>;
  /** Extra globs whose change always means the full suite (beyond the built-in config/lockfile list). */
  fullSuiteOn?: string[];
  /** The interpreter that runs pytest (a repo's virtualenv, e.g. `.venv/bin/python`). Default `python3`. */
  python?: string;
  /** Seconds a test run may take. Default 600. */
  timeoutSeconds?: number;
}

/** One observed outcome of a test on a given workspace state. */
export interface FlakyObservation {
  testId: string;
  diffHash: string;
  outcome: 'passed' | 'failed';
  at: string;
}

export interface FlakyTest {
  repo: string;
  testId: string;
  /** When it was first seen failing then passing on the same diff. */
  since: string;
  history: FlakyObservation[];
}

/**
 * Where quarantined tests live, per repo. `InMemoryFlakyStore` and `SqliteFlakyStore`
 * (server/src/feedback/flaky.ts) implement it; the fleet server picks one and exposes list/clear.
 */
export interface FlakyStore {
  list(repo: string): Promise<FlakyTest[]>;
  /** Marks a test flaky (idempotent) and appends the observations that proved it. */
  quarantine(repo: string, testId: string, evidence: FlakyObservation[]): Promise<void>;
  /** Removes tests from quarantine (all of the repo's when `testIds` is absent); returns how many. */
  clear(repo: string, testIds?: string[]): Promise<number>;
}
