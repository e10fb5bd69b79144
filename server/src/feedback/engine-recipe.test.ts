import type { EnvironmentRecipe } from '@dockhand/protocol';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFixtureRepo } from '../../../test/support/fixture-repo';
import { HostSandbox } from '../sandbox/testing/host-sandbox';
import { InMemoryBaselineStore } from './baseline';
import { runBaseline, SmartFeedbackEngine } from './engine';

/*
 * The engine with an environment recipe on a host-directory sandbox (the host's node): the
 * recipe's test command is what runs, a selection goes to its runner, a command it does not
 * know runs whole, and a missing script is infrastructure. gVisor: test-command.int.test.ts.
 */

class RecipeSandbox extends HostSandbox {
  constructor(root: string, baseSha: string, readonly environment: EnvironmentRecipe) {
    super(root, baseSha);
  }
}

function sandboxWith(test: string, scripts?: Record<string, string>) {
  const repo = createFixtureRepo('buggy-calc');
  if (scripts) repo.commit({ 'package.json': JSON.stringify({ name: 'buggy-calc', scripts }) }, 'scripts');
  const environment: EnvironmentRecipe = {
    repo: 'fixture/buggy-calc', install: { command: 'npm ci', source: 'default' }, lifecycleScripts: true, skipScripts: [], egressHosts: [],
    test: { command: test, source: '.dockhand/environment.yml' },
  };
  return { sandbox: new RecipeSandbox(repo.path, repo.sha, environment), root: repo.path };
}

describe('SmartFeedbackEngine with the repository test command', { timeout: 120_000 }, () => {
  it('runs the recipe command (npm test → node --test test/) and passes a selection to that runner', async () => {
    const { sandbox, root } = sandboxWith('npm test', { test: 'node --test test/' });
    const engine = new SmartFeedbackEngine({ repo: 'buggy-calc', baselineStore: new InMemoryBaselineStore() });
    const full = await engine.runTests(sandbox, { scope: 'full' });
    expect(full).toMatchObject({ command: 'npm test → node --test --test-reporter=tap test/', runner: 'node-test', wholeCommand: true, failed: 2, ok: false });
    expect(full.selectionReason).toBe("scope full: the repository's test command (`npm test` from .dockhand/environment.yml)");

    const baseline = await engine.baseline(sandbox);
    expect(baseline).toMatchObject({ preExistingFailures: ['test/calc.test.js > average of three numbers', 'test/format.test.js > formatAverage'], flaky: [] });
    expect((await engine.runTests(sandbox, { scope: 'full' })).ok).toBe(true);

    writeFileSync(join(root, 'src/format.js'), (await sandbox.readFile('src/format.js')).toString('utf8') + '\n// touched\n');
    const selected = await engine.runTests(sandbox, { scope: 'selected' });
    expect(selected.command).toBe('node --test --test-reporter=tap test/format.test.js');
    expect(selected).toMatchObject({ wholeCommand: false, failed: 1, ok: true, preExisting: ['test/format.test.js > formatAverage'] });
    expect(selected.cases.every((testCase) => testCase.file === 'test/format.test.js')).toBe(true);
  });

  it('a run that hangs after a change is red when the suite finished at the base, infrastructure when there is no baseline', async () => {
    const { sandbox, root } = sandboxWith('npm test', { test: 'node --test test/' });
    const engine = new SmartFeedbackEngine({ repo: 'buggy-calc', checks: { timeoutSeconds: 8 } });
    await engine.baseline(sandbox);
    const source = (await sandbox.readFile('src/format.js')).toString('utf8');
    writeFileSync(join(root, 'src/format.js'), source.replace(/function formatAverage\(([^)]*)\) \{/, 'function formatAverage($1) {\n  for (;;) {}'));
    const hung = await engine.runTests(sandbox, { scope: 'selected' });
    expect(hung.infrastructure).toBeUndefined();
    expect(hung).toMatchObject({ ok: false });
    expect(hung.cases.find((testCase) => testCase.id.endsWith('(timed out)'))?.message).toContain('at the base commit the whole suite finished in');
    const fresh = await new SmartFeedbackEngine({ repo: 'buggy-calc', checks: { timeoutSeconds: 8 } }).runTests(sandbox, { scope: 'selected' });
    expect(fresh.infrastructure?.kind).toBe('timeout');
  });

  it('a runner the change broke (its test script in package.json) is red and the change\u2019s, infrastructure when there is no baseline', async () => {
    const { sandbox, root } = sandboxWith('npm test', { test: 'node --test test/' });
    const engine = new SmartFeedbackEngine({ repo: 'buggy-calc' });
    await engine.baseline(sandbox);
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'buggy-calc', scripts: { test: 'node --no-such-flag --test test/' } }));
    const broken = await engine.runTests(sandbox, { scope: 'full' });
    expect(broken.infrastructure).toBeUndefined();
    expect(broken.ok).toBe(false);
    const blamed = broken.cases.find((testCase) => testCase.id.endsWith('(the runner did not start with the change)'));
    expect(blamed?.message).toContain('so the change broke the test run');
    expect(blamed?.message).toContain('the change touches how the tests run (package.json)');
    expect(broken.output).toContain('the runner did not start with the change');
    const fresh = await new SmartFeedbackEngine({ repo: 'buggy-calc' }).runTests(sandbox, { scope: 'full' });
    expect(fresh.infrastructure).toBeDefined();
  });

  it('a command it does not know runs whole and its exit status decides; a missing script is infrastructure', async () => {
    const unknown = sandboxWith('bash -c "node --test test/ >/dev/null"');
    const report = await new SmartFeedbackEngine({ repo: 'buggy-calc' }).runTests(unknown.sandbox, { scope: 'full' });
    expect(report).toMatchObject({ ok: false, failed: 1, passed: 0, wholeCommand: true, command: 'bash -c "node --test test/ >/dev/null"', runner: 'unknown' });
    expect(report.cases[0]?.id).toBe('bash -c "node --test test/ >/dev/null" (exited with 1)');
    expect(report.infrastructure).toBeUndefined();

    const missing = sandboxWith('npm run check');
    const result = await runBaseline(missing.sandbox);
    expect(result.infrastructure).toMatchObject({ kind: 'missing', message: expect.stringContaining('Missing script: "check"') });
    expect(result.infrastructure?.action).toContain('it comes from .dockhand/environment.yml');
  });
});
