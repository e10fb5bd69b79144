import type { EnvironmentRecipe } from '@dockhand/protocol';
import { describe, expect, it } from 'vitest';
import { createFixtureRepo } from '../../../test/support/fixture-repo';
import { HostSandbox } from '../sandbox/testing/host-sandbox';
import { InMemoryBaselineStore } from './baseline';
import { SmartFeedbackEngine } from './engine';

/*
 * A suite started through something Dockhand has no runner for (a script that spawns the runner)
 * is counted through the side channel; the baseline names the runner that reported instead of
 * "unknown" (census: commander.js's node --test, pathe's vitest, prop-types' jest were shown
 * "unknown" by repo check although hundreds of their tests were counted).
 */

class RecipeSandbox extends HostSandbox {
  constructor(root: string, baseSha: string, readonly environment: EnvironmentRecipe) {
    super(root, baseSha);
  }
}

describe('the runner a baseline names', { timeout: 120_000 }, () => {
  it('is the runner whose reports the side channel counted when the command is a wrapper', async () => {
    const repo = createFixtureRepo('buggy-calc');
    repo.commit({ 'run-tests.js': "require('node:child_process').spawnSync(process.execPath, ['--test', 'test/'], { stdio: 'inherit' });\n" }, 'a wrapper');
    const environment: EnvironmentRecipe = {
      repo: 'fixture/buggy-calc', node: { version: process.versions.node, source: 'the host' }, install: { command: 'true', source: 'default' }, lifecycleScripts: true, skipScripts: [], egressHosts: [],
      test: { command: 'node run-tests.js', source: '.dockhand/environment.yml' },
    };
    const sandbox = new RecipeSandbox(repo.path, repo.sha, environment);
    const engine = new SmartFeedbackEngine({ repo: 'buggy-calc', baselineStore: new InMemoryBaselineStore() });
    const baseline = await engine.baseline(sandbox);
    expect(baseline?.runner).toBe('unknown');
    expect(baseline?.passed).toBeGreaterThan(0);
    expect(baseline?.reportedBy).toEqual(['node-test']);
  });
});
