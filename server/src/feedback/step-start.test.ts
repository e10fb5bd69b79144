import type { EnvironmentRecipe } from '@dockhand/protocol';
import { describe, expect, it } from 'vitest';
import { createFixtureRepo } from '../../../test/support/fixture-repo';
import { HostSandbox } from '../sandbox/testing/host-sandbox';
import { InMemoryBaselineStore } from './baseline';
import { SmartFeedbackEngine } from './engine';

/*
 * A CI job's step that is no test step and cannot start in the sandbox (census moment/luxon:
 * `npm run site` needs rsync) is that step's pre-existing failure; the test step's results stand.
 * Before, the whole check was "the test runner could not start … ran no test".
 */

class RecipeSandbox extends HostSandbox {
  constructor(root: string, baseSha: string, readonly environment: EnvironmentRecipe) {
    super(root, baseSha);
  }
}

function sandboxWith(steps: Array<{ name: string; command: string }>) {
  const repo = createFixtureRepo('buggy-calc');
  const environment: EnvironmentRecipe = {
    repo: 'fixture/buggy-calc', node: { version: process.versions.node, source: 'the host' }, install: { command: 'true', source: 'default' }, lifecycleScripts: true, skipScripts: [], egressHosts: [],
    test: { command: steps.map((step) => step.command).join(' && '), source: '.github/workflows/ci.yml › test', steps },
  };
  return new RecipeSandbox(repo.path, repo.sha, environment);
}

describe('a step that cannot start', { timeout: 120_000 }, () => {
  it('is a pre-existing failure of its own when it is no test step and the tests were counted', async () => {
    const sandbox = sandboxWith([
      { name: 'npm run test', command: 'node --test test/' },
      { name: 'npm run site', command: 'dockhand-no-such-docs-tool build/api-docs' },
    ]);
    const baseline = await new SmartFeedbackEngine({ repo: 'buggy-calc', baselineStore: new InMemoryBaselineStore() }).baseline(sandbox);
    expect(baseline?.infrastructure).toBeUndefined();
    expect(baseline?.passed).toBeGreaterThan(0);
    expect(baseline?.preExistingFailures).toContain('npm run site: dockhand-no-such-docs-tool build/api-docs (could not start)');
  });

  it('is a lint step whatever paths it names (#32: `flake8 src tests` is no test step)', async () => {
    const sandbox = sandboxWith([
      { name: 'npm run test', command: 'node --test test/' },
      { name: 'Lint with flake8', command: 'flake8 src tests --count' },
    ]);
    const baseline = await new SmartFeedbackEngine({ repo: 'buggy-calc', baselineStore: new InMemoryBaselineStore() }).baseline(sandbox);
    expect(baseline?.infrastructure).toBeUndefined();
    expect(baseline?.passed).toBeGreaterThan(0);
  });

  it('still stops the run when it is the test step', async () => {
    const sandbox = sandboxWith([
      { name: 'npm run test', command: 'node --test test/' },
      { name: 'coverage', command: 'dockhand-no-such-c8 npm test' },
    ]);
    const baseline = await new SmartFeedbackEngine({ repo: 'buggy-calc', baselineStore: new InMemoryBaselineStore() }).baseline(sandbox);
    expect(baseline?.infrastructure?.message).toMatch(/dockhand-no-such-c8/);
  });
});
