import { isTestPath } from '../agent/tools/paths';
import { SmartFeedbackEngine } from '../feedback/engine';
import { InMemoryFlakyStore } from '../feedback/flaky';
import type { TestCaseResult } from '../feedback/types';
import type { Sandbox } from '../sandbox/types';
import type { EvalInstance } from './formats';
import { changedFiles, commitFiles, commitPatches, diffCommits, git, listFiles, plantedBase, showFile, treeOf } from './git-tree';
import { applyMutation, mutationsOf, spreadOrder, withoutTests, type Mutation } from './mutate';
import { ensureRepository, registeredName, type EvalSession } from './session';
import { leafOf } from './test-ids';

/*
 * `dockhand eval make`: instances from a repository, each verified fail → pass by running the
 * repository's own tests in a gVisor sandbox of it (the feedback engine, as grading does) before it
 * is kept.
 *
 * - history (SWE-bench's collection): a commit that changes source and test files, whose tests
 *   from the commit fail at its parent with only the test part applied and pass with the whole
 *   commit. base_commit = the parent, patch = the source part, test_patch = the test part, the
 *   problem statement = the commit message.
 * - planted (SWE-smith's): a one-line mutation of a function the tests exercise, kept when tests
 *   that passed before now fail. The instance's base is the mutated tree with the test files of
 *   the failing tests removed (test_patch puts them back, so the agent does not see the tests
 *   that judge it, as in SWE-bench); patch undoes the mutation. Its problem statement is written
 *   from the failing tests' names and messages.
 *
 * Each base commit gets a branch `eval/<instance_id>` in the repository so that a registration
 * (which copies branches) carries it.
 */

export interface MakeOptions {
  session: EvalSession;
  /** A git working repository on this machine. */
  repoPath: string;
  /** The instances' `repo` (e.g. `dockhand-eval/buggy-calc`). */
  repo: string;
  /** What goes into `dockhand.repo_path` (e.g. relative to the instances file). */
  repoPathField: string;
  /** Commit to plant bugs at / history to walk from (default HEAD). */
  sha?: string;
  planted?: number;
  /** Mutations run at most while planting (default 4 × planted). */
  maxTries?: number;
  /** Commits of history to examine (0: none). */
  history?: number;
  language?: string;
  onProgress?: (line: string) => void;
}

export interface MadeInstances {
  instances: EvalInstance[];
  /** Candidates looked at and why each was dropped. */
  dropped: Array<{ candidate: string; reason: string }>;
}

async function suite(session: EvalSession, sandbox: Sandbox, repo: string): Promise<TestCaseResult[]> {
  const engine = new SmartFeedbackEngine({ repo: `eval-make/${repo}`, flakyStore: new InMemoryFlakyStore() });
  const report = await engine.runTests(sandbox, { scope: 'full' });
  if (report.infrastructure) throw new Error(`${repo}: ${report.infrastructure.message}`);
  void session;
  return report.cases;
}

/** Cases that are tests (not a whole file reported failed because it could not load, nor a case without a name). */
function realTests(cases: TestCaseResult[]): TestCaseResult[] {
  return cases.filter((testCase) => testCase.id !== testCase.file && testCase.id.trim() !== '');
}

const sourceFile = (path: string) => /\.(m?js|cjs|ts|py)$/.test(path) && !isTestPath(path) && !/(^|\/)(node_modules|dist|build|vendor|examples?|docs?|scripts?|bench(mark)?s?)\//.test(path) && !/(^|\/)(setup|conftest|__init__)\.py$|\.d\.ts$|\.config\.[cm]?[jt]s$/.test(path);

function statementFor(mutation: Mutation, failing: TestCaseResult[]): string {
  const where = mutation.functionName ? `\`${mutation.functionName}()\` in \`${mutation.file}\`` : `\`${mutation.file}\``;
  const lines = [`${where} gives wrong results.`, '', 'These tests fail:', ''];
  for (const testCase of failing.slice(0, 5)) {
    const message = (testCase.message ?? '')
      .split('\n')
      .filter((line) => line.trim() !== '' && !/^\s*(type|code|failureType|operator|stack|location|error: \|-?)\s*:?/.test(line) && !/\(\/workspace\/|node:internal|^\s+at /.test(line))
      .slice(0, 4)
      .join('\n    ');
    lines.push(`- ${testCase.id}${message ? `\n    ${message}` : ''}`);
  }
  if (failing.length > 5) lines.push(`- and ${failing.length - 5} more`);
  lines.push('', `It used to work; make ${mutation.functionName ? `\`${mutation.functionName}()\`` : 'it'} behave as these tests expect again.`);
  return lines.join('\n');
}

function branchFor(repoPath: string, instanceId: string, sha: string): void {
  git(repoPath, ['branch', '-f', `eval/${instanceId}`, sha]);
}

/**
 * What the base does to the failing tests' files: removes them (SWE-bench's way: test_patch
 * brings them back), or, when they are every test file the suite has (its runner would then find
 * nothing to run at the base), removes only the failing tests' top-level blocks from them. A
 * string says why the candidate cannot be hidden.
 */
function hideTests(repoPath: string, sha: string, testFiles: string[], failing: TestCaseResult[], suiteFiles: Set<string>): Record<string, string | null> | string {
  if (suiteFiles.size > testFiles.length || [...suiteFiles].some((file) => !testFiles.includes(file))) return Object.fromEntries(testFiles.map((file) => [file, null]));
  const files: Record<string, string | null> = {};
  for (const file of testFiles) {
    const titles = [...new Set(failing.filter((testCase) => testCase.file === file).map((testCase) => leafOf(testCase.id, testCase.file).leaf.split(' > ').at(-1) ?? ''))];
    const result = withoutTests(showFile(repoPath, sha, file) ?? '', titles);
    if (result.missing.length > 0) return `no top-level test block in ${file} for ${result.missing.join(', ')}`;
    if (result.left === 0) return `${file} would have no test left at the base`;
    files[file] = result.text;
  }
  return files;
}

/** Planted bugs at `sha`, verified by running the suite before and after each mutation. */
async function plant(options: MakeOptions, sandbox: Sandbox, sha: string, baseline: TestCaseResult[], out: MadeInstances): Promise<void> {
  const want = options.planted ?? 0;
  // Keyed by the test without its file: node's TAP names the file of failing tests only.
  const key = (testCase: TestCaseResult) => leafOf(testCase.id, testCase.file).leaf;
  const passedBefore = new Map(realTests(baseline).filter((testCase) => testCase.outcome === 'passed').map((testCase) => [key(testCase), testCase]));
  const name = registeredName(options.repo);
  const files = listFiles(options.repoPath, sha).filter(sourceFile);
  const candidates = spreadOrder(files.flatMap((file) => mutationsOf(file, showFile(options.repoPath, sha, file) ?? '')));
  const perFunction = new Set<string>();
  // The suite's test files as its runner names them; TAP names only failing tests' files, so then the repository's.
  const reported = new Set(realTests(baseline).map((testCase) => testCase.file).filter((file): file is string => file !== undefined));
  const suiteFiles = reported.size > 0 ? reported : new Set(listFiles(options.repoPath, sha).filter((file) => isTestPath(file) && /\.(m?js|cjs|ts|py)$/.test(file) && !/\.test-d\.ts$/.test(file)));
  let kept = 0;
  let tried = 0;
  const maxTries = options.maxTries ?? want * 4;
  for (const mutation of candidates) {
    if (kept >= want) break;
    if (tried >= maxTries) {
      options.onProgress?.(`stopped after ${tried} candidates (--max-tries)`);
      break;
    }
    const functionKey = `${mutation.file}#${mutation.functionName}`;
    const label = `${mutation.file}:${mutation.line} ${mutation.rule}`;
    if (perFunction.has(functionKey)) continue; // one bug per function keeps the set varied
    const original = showFile(options.repoPath, sha, mutation.file) ?? '';
    const mutated = applyMutation(original, mutation);
    tried++;
    await sandbox.writeFile(mutation.file, mutated);
    let after: TestCaseResult[];
    const started = Date.now();
    try {
      after = await suite(options.session, sandbox, name);
      options.onProgress?.(`ran ${label} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    } finally {
      await sandbox.writeFile(mutation.file, original);
    }
    const failing = realTests(after).filter((testCase) => testCase.outcome === 'failed' && passedBefore.has(key(testCase)));
    const brokenFiles = after.filter((testCase) => testCase.id === testCase.file && testCase.outcome === 'failed');
    if (failing.length === 0) {
      out.dropped.push({ candidate: label, reason: brokenFiles.length > 0 ? 'only whole test files failed to load' : 'no test fails' });
      options.onProgress?.(`dropped ${label}: ${out.dropped.at(-1)?.reason} (${after.length} cases)`);
      continue;
    }
    const testFiles = [...new Set(failing.map((testCase) => testCase.file).filter((file): file is string => file !== undefined))];
    if (testFiles.length === 0) {
      out.dropped.push({ candidate: label, reason: 'the failing tests name no file' });
      continue;
    }
    const instanceId = `${name}-p${String(kept + 1).padStart(3, '0')}`;
    const hiding = hideTests(options.repoPath, sha, testFiles, failing, suiteFiles);
    if (typeof hiding === 'string') {
      out.dropped.push({ candidate: label, reason: hiding });
      options.onProgress?.(`dropped ${label}: ${hiding}`);
      continue;
    }
    const mutatedCommit = commitFiles(options.repoPath, sha, { [mutation.file]: mutated }, `planted: ${label}`);
    const hidden = commitFiles(options.repoPath, mutatedCommit, hiding, `hide the tests of ${instanceId}`);
    const patch = diffCommits(options.repoPath, mutatedCommit, sha, [mutation.file]);
    const testPatch = diffCommits(options.repoPath, hidden, mutatedCommit, testFiles);
    // The base is rebuilt from the instance line alone (plantedBase), so a fresh machine gets the same SHA.
    const base = plantedBase(options.repoPath, sha, instanceId, patch, testPatch);
    if (treeOf(options.repoPath, base) !== treeOf(options.repoPath, hidden)) throw new Error(`${instanceId}: the base rebuilt from patch and test_patch is not the planted tree`);
    // Every other test that passed before and still passes (the whole suite is graded, not only the hidden files).
    const stillPassing = realTests(after).filter((testCase) => testCase.outcome === 'passed' && passedBefore.has(key(testCase)));
    // The packaged instance must apply as graded: test_patch then patch on base.
    commitPatches(options.repoPath, base, [testPatch, patch], 'check');
    branchFor(options.repoPath, instanceId, base);
    perFunction.add(functionKey);
    kept++;
    out.instances.push({
      repo: options.repo,
      instance_id: instanceId,
      base_commit: base,
      patch,
      test_patch: testPatch,
      problem_statement: statementFor(mutation, failing),
      hints_text: '',
      created_at: '2026-01-01T00:00:00Z',
      version: '1.0',
      FAIL_TO_PASS: failing.map((testCase) => testCase.id),
      PASS_TO_PASS: stillPassing.map((testCase) => testCase.id),
      environment_setup_commit: sha,
      dockhand: { repo_path: options.repoPathField, origin: 'planted', ...(options.language ? { language: options.language } : {}) },
    });
    options.onProgress?.(`${instanceId}: ${label}: ${failing.length} failing, ${stillPassing.length} still passing`);
  }
}

/** Commits of history that change source and tests and whose new tests go fail → pass. */
async function mine(options: MakeOptions, sha: string, repo: string, out: MadeInstances): Promise<void> {
  const commits = git(options.repoPath, ['rev-list', '--no-merges', `--max-count=${options.history ?? 0}`, sha]).split('\n').filter(Boolean);
  const name = registeredName(options.repo);
  let kept = 0;
  for (const commit of commits) {
    const parent = git(options.repoPath, ['rev-list', '--parents', '-n', '1', commit]).trim().split(' ')[1];
    if (!parent) continue;
    const files = changedFiles(options.repoPath, parent, commit);
    const tests = files.filter((file) => isTestPath(file.path)).map((file) => file.path);
    const sources = files.filter((file) => !isTestPath(file.path)).map((file) => file.path);
    const label = commit.slice(0, 12);
    if (tests.length === 0 || !sources.some(sourceFile)) {
      out.dropped.push({ candidate: label, reason: 'does not change both source and tests' });
      continue;
    }
    const testPatch = diffCommits(options.repoPath, parent, commit, tests);
    const patch = diffCommits(options.repoPath, parent, commit, sources);
    const withTests = commitPatches(options.repoPath, parent, [testPatch], 'tests only');
    const { sandbox } = await options.session.sandboxes.provider.acquire({ repo, baseSha: parent, taskId: `make-${label}` });
    let before: TestCaseResult[];
    let after: TestCaseResult[];
    try {
      before = await runAt(options, sandbox, withTests, parent, name);
      after = await runAt(options, sandbox, commit, parent, name);
    } finally {
      await options.session.sandboxes.provider.release(sandbox);
    }
    const key = (testCase: TestCaseResult) => leafOf(testCase.id, testCase.file).leaf;
    const passing = new Map(realTests(after).filter((testCase) => testCase.outcome === 'passed').map((testCase) => [key(testCase), testCase]));
    const seenBefore = new Set(realTests(before).map(key));
    const failToPass = realTests(before).filter((testCase) => testCase.outcome === 'failed' && passing.has(key(testCase))).map((testCase) => testCase.id);
    // New tests of the commit that pass with it count too (they could not run before it).
    const missingBefore = [...passing.entries()].filter(([leaf, testCase]) => !seenBefore.has(leaf) && tests.includes(testCase.file ?? '')).map(([, testCase]) => testCase.id);
    const passToPass = realTests(before).filter((testCase) => testCase.outcome === 'passed' && passing.has(key(testCase))).map((testCase) => testCase.id);
    const f2p = [...failToPass, ...missingBefore];
    if (f2p.length === 0) {
      out.dropped.push({ candidate: label, reason: 'no test goes from fail to pass' });
      continue;
    }
    const instanceId = `${name}-h${String(++kept).padStart(3, '0')}`;
    branchFor(options.repoPath, instanceId, parent);
    const message = git(options.repoPath, ['log', '-1', '--format=%B', commit]).trim();
    out.instances.push({
      repo: options.repo,
      instance_id: instanceId,
      base_commit: parent,
      patch,
      test_patch: testPatch,
      problem_statement: message || `Make the change of ${label}`,
      hints_text: '',
      created_at: git(options.repoPath, ['log', '-1', '--format=%cI', commit]).trim(),
      version: '1.0',
      FAIL_TO_PASS: f2p,
      PASS_TO_PASS: passToPass,
      environment_setup_commit: parent,
      dockhand: { repo_path: options.repoPathField, origin: 'history', ...(options.language ? { language: options.language } : {}) },
    });
    options.onProgress?.(`${instanceId}: ${label} ${message.split('\n')[0]}: ${f2p.length} fail → pass`);
  }
}

/** The suite with the workspace at `commit`'s tree (written over the sandbox's base checkout). */
async function runAt(options: MakeOptions, sandbox: Sandbox, commit: string, base: string, name: string): Promise<TestCaseResult[]> {
  const patch = diffCommits(options.repoPath, base, commit);
  const reset = await sandbox.exec({ cmd: ['bash', '-c', 'git checkout -q -- . && git clean -fdq'] });
  if (reset.exitCode !== 0) throw new Error(`resetting the sandbox: ${reset.stderr}`);
  if (patch.trim() !== '') {
    const applied = await sandbox.exec({ cmd: ['git', 'apply', '--whitespace=nowarn', '-'], stdin: patch });
    if (applied.exitCode !== 0) throw new Error(`applying ${commit.slice(0, 12)} in the sandbox: ${applied.stderr}`);
  }
  return suite(options.session, sandbox, name);
}

export async function makeInstances(options: MakeOptions): Promise<MadeInstances> {
  const sha = git(options.repoPath, ['rev-parse', options.sha ?? 'HEAD']).trim();
  const out: MadeInstances = { instances: [], dropped: [] };
  const repo = await ensureRepository(options.session, registeredName(options.repo), options.repoPath, sha);
  if ((options.planted ?? 0) > 0) {
    const { sandbox } = await options.session.sandboxes.provider.acquire({ repo, baseSha: sha, taskId: `make-${registeredName(options.repo)}` });
    try {
      const baseline = await suite(options.session, sandbox, registeredName(options.repo));
      options.onProgress?.(`${options.repo} at ${sha.slice(0, 12)}: ${baseline.filter((testCase) => testCase.outcome === 'passed').length} tests pass, ${baseline.filter((testCase) => testCase.outcome === 'failed').length} fail before any change`);
      await plant(options, sandbox, sha, baseline, out);
    } finally {
      await options.session.sandboxes.provider.release(sandbox);
    }
  }
  if ((options.history ?? 0) > 0) await mine(options, sha, repo, out);
  return out;
}
