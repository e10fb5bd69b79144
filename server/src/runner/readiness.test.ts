import type { ReadinessReport } from '@dockhand/protocol';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalForge } from '../forge/local-forge';
import { RepoMirror } from '../sandbox/mirror';
import { SqliteStore } from '../store/sqlite';
import type { SandboxProvider } from './ports';
import { ReadinessChecks, testBlockers } from './readiness';
import { registeredSource, RepoRegistry } from './registry';

const report = (tests: Partial<ReadinessReport['tests']>): ReadinessReport =>
  ({ blocking: [], tests: { ok: true, detail: '', passed: 0, failed: 0, flaky: [], preExistingFailures: [], command: 'npm test', ...tests } }) as unknown as ReadinessReport;

describe('readiness: what in the tests at the base blocks', () => {
  it('blocks a base where no test passes: only the command failing (dequal: uvu -r esm on Node 22), or every test red', () => {
    const whole = report({ failed: 1, preExistingFailures: ['npm test (exited with 1)'] });
    testBlockers(whole, undefined);
    expect(whole.tests.ok).toBe(false);
    expect(whole.blocking).toHaveLength(1);
    expect(whole.blocking[0]?.problem).toBe('no test passes at the base: 1 failed (npm test (exited with 1)), so no change can be verified');
    expect(whole.blocking[0]?.action).toContain('node: in .dockhand/environment.yml');
  });

  it('does not block a base with failures beside passing tests (a planted bug), and still blocks no tests and a broken runner', () => {
    const planted = report({ passed: 24, failed: 6 });
    testBlockers(planted, undefined);
    expect(planted.blocking).toEqual([]);
    expect(planted.tests.ok).toBe(true);
    const none = report({});
    testBlockers(none, undefined);
    expect(none.blocking[0]?.problem).toBe('the test command (npm test) ran no test');
    const broken = report({});
    testBlockers(broken, 'the test runner could not start: mocha: not found');
    expect(broken.blocking[0]?.problem).toBe('the test runner could not start: mocha: not found');
    expect([planted, none, broken].map((entry) => entry.tests.judgedBy)).toEqual(['tests', 'nothing', 'nothing']);
  });

  it('a step that passes counted by its exit status is no "ran no test" and no "no test passes": a change is judged on it', () => {
    // `tsc && xo && ts-scripts test`: xo red at the base (pre-existing), the wrapper's tests not read per test.
    const steps = [
      { name: 'tsc', exitCode: 0, counted: 'exit status' as const, passed: 0, failed: 0 },
      { name: 'xo', exitCode: 1, counted: 'exit status' as const, passed: 0, failed: 1 },
      { name: 'ts-scripts test', exitCode: 0, counted: 'exit status' as const, passed: 0, failed: 0 },
    ];
    const counted = report({ failed: 1, preExistingFailures: ['xo (exited with 1)'], detail: '0 passed, 1 failed' });
    testBlockers(counted, undefined, steps);
    expect(counted.blocking).toEqual([]);
    expect(counted.tests.ok).toBe(true);
    expect(counted.tests.detail).toBe('0 passed, 1 failed — counted by exit status: tsc; ts-scripts test');
    // Green by exit status alone is an opaque verification: the report says so (bench:census counts it).
    expect(counted.tests.judgedBy).toBe('exit status');
    // Every step red at the base: still blocked.
    const red = report({ failed: 1, preExistingFailures: ['xo (exited with 1)'] });
    testBlockers(red, undefined, steps.filter((step) => step.exitCode !== 0));
    expect(red.blocking[0]?.problem).toContain('no test passes at the base');
  });

  it('blocks where only a typecheck passed and every step that runs tests failed (typanion: `yarn tsc` passed, mocha exited 128), naming what the failing step printed', () => {
    const steps = [
      { name: 'yarn tsc', exitCode: 0, counted: 'exit status' as const, passed: 0, failed: 0 },
      { name: 'yarn test → yarn tsc && TS_NODE_TRANSPILE_ONLY=true mocha --require ts-node/register --extension ts tests/**/*.test.ts', exitCode: 128, counted: 'exit status' as const, passed: 0, failed: 1, tail: 'fatal: not a git repository' },
    ];
    const typanion = report({ failed: 1, preExistingFailures: ['yarn test (exited with 128)'], detail: '0 passed, 1 failed' });
    testBlockers(typanion, undefined, steps);
    expect(typanion.tests.ok).toBe(false);
    expect(typanion.tests.judgedBy).toBe('nothing');
    expect(typanion.blocking).toHaveLength(1);
    expect(typanion.blocking[0]?.problem).toContain('no test passes at the base: 1 failed (yarn test (exited with 128))');
    expect(typanion.blocking[0]?.problem).toContain('mocha --require ts-node/register --extension ts tests/**/*.test.ts printed last:\nfatal: not a git repository');
    // The same typecheck beside a test step that passes by its exit status still judges a change.
    const passing = report({ failed: 0, detail: '0 passed, 0 failed' });
    testBlockers(passing, undefined, [steps[0]!, { ...steps[1]!, exitCode: 0, failed: 0 }]);
    expect(passing.blocking).toEqual([]);
  });

  it('gives a Python repository Python advice, never its Node version, and names the CI step followed', () => {
    const python = report({ failed: 3 });
    python.environment = {
      repo: 'pyjwt',
      python: { version: '3.11', requirements: [], source: 'pyproject.toml' },
      install: { command: 'python3 -m venv --system-site-packages .venv', source: 'detected' },
      lifecycleScripts: true,
      skipScripts: [],
      egressHosts: [],
      test: { command: 'python -m tox', source: '.github/workflows/main.yml › tests › "Run tox"', steps: [{ name: 'Run tox', command: 'python -m tox' }] },
    };
    testBlockers(python, undefined);
    expect(python.blocking[0]?.action).not.toMatch(/Node/);
    expect(python.blocking[0]?.action).toContain('(.github/workflows/main.yml › tests › "Run tox"): install what they import into the .venv');
  });
});

/*
 * The commit a check without --sha checks, on real git: a source registered through the local
 * forge, whose copy (`<data>/forge/<name>.git`) learns a source's new commits only when asked.
 */
describe('readiness: the commit a check without a SHA checks', () => {
  const dirs: string[] = [];
  const closers: Array<() => void> = [];
  afterEach(() => {
    for (const close of closers.splice(0)) close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  const gitEnv = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' };
  const git = (cwd: string, ...args: string[]) => execFileSync('git', args, { cwd, env: gitEnv, encoding: 'utf8' }).trim();
  const commit = (cwd: string, file: string, text: string) => {
    writeFileSync(join(cwd, file), text);
    git(cwd, 'add', '-A');
    git(cwd, 'commit', '-q', '-m', `${file}: ${text.trim()}`);
    return git(cwd, 'rev-parse', 'HEAD');
  };

  async function registered() {
    const root = mkdtempSync(join(tmpdir(), 'dockhand-readiness-'));
    dirs.push(root);
    const source = join(root, 'shop');
    mkdirSync(source);
    git(source, 'init', '-q', '-b', 'main');
    const first = commit(source, 'a.txt', 'one\n');
    const store = new SqliteStore(':memory:');
    closers.push(() => store.close());
    const mirror = new RepoMirror(join(root, 'data'), { sources: registeredSource(store) });
    const localForge = new LocalForge({ dataDir: join(root, 'data/forge'), store: store.pullRequests });
    const registry = new RepoRegistry({ store, mirror, localForge });
    const { registration } = await registry.register({ name: 'shop', source }, { name: 'root', role: 'admin', createdAt: '' });
    // No sandboxes: the check fails once it asks for one; what is read here is its commit.
    const sandboxes: SandboxProvider = { acquire: () => Promise.reject(new Error('no sandboxes in this test')), release: async () => undefined };
    const checks = new ReadinessChecks({ registry, sandboxes, feedback: () => { throw new Error('not reached'); } });
    closers.push(() => checks.close());
    return { source, first, registration, registry, mirror, localForge, checks };
  }

  it("checks the head of the source's default branch as it is now, not the forge copy's, and says so", async () => {
    const { source, first, registration, mirror, checks } = await registered();
    const later = commit(source, 'a.txt', 'two\n');
    // What a check read before: the copy's head, still the commit of the registration.
    expect(await mirror.branchHead('shop', 'main')).toBe(first);

    const status = await checks.start(registration);
    expect(status.sha).toBe(later);
    expect(status.head).toEqual({ branch: 'main', source });
    expect(await mirror.holds('shop', later)).toBe(true);
  });

  it("checks the source's head where the forge copy's went another way (a PR merged there), leaving the copy's alone", async () => {
    const { source, first, registration, localForge, checks } = await registered();
    const forge = localForge.repositoryPath('shop');
    const merged = git(forge, 'commit-tree', `${first}^{tree}`, '-p', first, '-m', 'merged on the forge');
    git(forge, 'update-ref', 'refs/heads/main', merged);
    const later = commit(source, 'a.txt', 'two\n');

    expect(await checks.start(registration)).toMatchObject({ sha: later, head: { branch: 'main', source } });
    expect(git(forge, 'rev-parse', 'refs/heads/main')).toBe(merged);
  });

  it("checks the forge copy's head where it is ahead of the source's (a PR merged there on top of it)", async () => {
    const { source, first, registration, localForge, checks } = await registered();
    const forge = localForge.repositoryPath('shop');
    const merged = git(forge, 'commit-tree', `${first}^{tree}`, '-p', first, '-m', 'merged on the forge');
    git(forge, 'update-ref', 'refs/heads/main', merged);

    expect(await checks.start(registration)).toMatchObject({ sha: merged, head: { branch: 'main', source: 'dockhand-local://shop' } });
    expect(git(source, 'rev-parse', 'main')).toBe(first);
  });

  it('follows a source whose default branch changed', async () => {
    const { source, registration, checks } = await registered();
    git(source, 'checkout', '-q', '-b', 'trunk');
    const trunk = commit(source, 'b.txt', 'trunk\n');

    expect(await checks.start(registration)).toMatchObject({ sha: trunk, head: { branch: 'trunk', source } });
  });

  it('checks a commit given with its SHA as it is, with no head', async () => {
    const { first, registration, checks } = await registered();
    const status = await checks.start(registration, first);
    expect(status.sha).toBe(first);
    expect(status.head).toBeUndefined();
  });
});
