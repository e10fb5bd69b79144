import type { EnvironmentRecipe } from '@dockhand/protocol';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerSandbox } from '../sandbox/docker-sandbox';
import { DockerSandboxDriver } from '../sandbox/docker-driver';
import { checkSandboxHost } from '../sandbox/host-check';
import { buildScript } from '../sandbox/snapshot-build';
import type { Sandbox } from '../sandbox/types';
import { InMemoryBaselineStore } from './baseline';
import { runBaseline, SmartFeedbackEngine } from './engine';

/*
 * A node-tap repository (tap 16.3.10 from the npm registry, .ci/needs/feedback.sh) shaped like
 * npm/ini — `test: tap`, a `posttest` lint — in a real gVisor sandbox of `dockhand/base`: the
 * baseline counts its assertions and names the pre-existing failure `file > test > assertion`,
 * and a selection runs `tap <file>` with coverage off (a part of the suite never covers 100%).
 */

const ROOT = resolve(import.meta.dirname, '../../..');
const IMAGE = 'dockhand/base:latest';
const TAP = process.env.DOCKHAND_FEEDBACK_TAP ?? join(homedir(), '.cache/dockhand/feedback-tap16');
let driver: DockerSandboxDriver;
const sandboxes: Sandbox[] = [];

const FILES: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'tap-repo', private: true, scripts: { test: 'tap', posttest: 'npm run lint', lint: 'node scripts/lint.js' } }, null, 2),
  // tap 16 writes nyc's coverage data to .nyc_output/ in the workspace on every run; this
  // repository does not ignore it: the snapshot build's .git/info/exclude does (tapRepo).
  '.gitignore': 'node_modules/\n',
  'scripts/lint.js': "'use strict';\nconsole.log('lint ok');\n",
  'lib/num.js': "'use strict';\nexports.parse = (text) => Number(text);\n",
  'lib/words.js': "'use strict';\nexports.upper = (text) => text.toUpperCase();\n",
  'test/num.js': `'use strict';\nconst t = require('tap');\nconst { parse } = require('../lib/num.js');\nt.test('parse', async (t) => {\n  t.equal(parse('1'), 1, 'parses one');\n  t.equal(parse('NaN'), 0, 'parses NaN as zero');\n});\n`,
  'test/words.js': `'use strict';\nconst t = require('tap');\nconst { upper } = require('../lib/words.js');\nt.test('upper', async (t) => {\n  t.equal(upper('a'), 'A', 'one letter');\n  t.test('longer', async (t) => {\n    t.equal(upper('ab'), 'AB', 'two letters');\n  });\n});\n`,
};

function git(cwd: string, ...args: string[]): string {
  // Fixed dates: the same files give the same SHA, so the image of an earlier run is reused.
  const env = { ...process.env, GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z', GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z' };
  return execFileSync('git', ['-c', 'user.name=Fixture', '-c', 'user.email=fixture@dockhand.invalid', ...args], { cwd, encoding: 'utf8', env }).trim();
}

/** The repository with its node_modules, committed, as an image the way a snapshot holds it. */
function tapRepo(): { image: string; sha: string } {
  if (!existsSync(join(TAP, 'node_modules/.bin/tap'))) execFileSync('bash', [join(ROOT, '.ci/needs/feedback.sh')], { stdio: 'inherit' });
  const dir = mkdtempSync(join(tmpdir(), 'dockhand-node-tap-'));
  for (const [path, text] of Object.entries(FILES)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'tap repo');
  // The snapshot build's install step (its install a no-op here): it writes .git/info/exclude.
  execFileSync('bash', ['-c', buildScript({ repo: RECIPE.repo, recipeHash: '0'.repeat(16), environment: { ...RECIPE, install: { command: 'true', source: 'default' } }, toolchains: [] })], { cwd: dir, stdio: 'ignore' });
  cpSync(join(TAP, 'node_modules'), join(dir, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  const sha = git(dir, 'rev-parse', 'HEAD');
  const tag = `dockhand-test/node-tap:${sha.slice(0, 12)}`;
  execFileSync('docker', ['build', '-q', '-t', tag, '-f-', dir], { input: `FROM ${IMAGE}\nCOPY --chown=1000:1000 . /workspace\n`, stdio: ['pipe', 'ignore', 'inherit'] });
  return { image: tag, sha };
}

const RECIPE: EnvironmentRecipe = {
  repo: 'fixture/node-tap-repo',
  install: { command: 'npm ci', source: 'default' },
  lifecycleScripts: true,
  skipScripts: [],
  egressHosts: [],
  test: { command: 'npm test', source: 'package.json' },
};

beforeAll(async () => {
  execFileSync(join(ROOT, 'sandbox-images/base/build.sh'), { stdio: ['ignore', 'ignore', 'inherit'] });
  const docker = new Docker();
  const host = await checkSandboxHost(docker);
  expect(host.runtime).toBe('runsc');
  driver = new DockerSandboxDriver({ docker, ownerId: 'feedback-node-tap-int', runtime: host.runtime });
});

afterAll(async () => {
  await Promise.all(sandboxes.map((sandbox) => sandbox.destroy()));
});

describe('node-tap inside gVisor', { timeout: 300_000 }, () => {
  it("reads tap 16's assertions through npm test and its posttest, and runs a selection with coverage off", async () => {
    const { image, sha } = tapRepo();
    const sandbox = await driver.create({ image, baseSha: sha, labels: { 'dockhand.task': 'feedback-node-tap' } });
    sandboxes.push(sandbox);
    if (!(sandbox instanceof DockerSandbox)) throw new Error('the driver gave no DockerSandbox');
    sandbox.environment = RECIPE;

    const store = new InMemoryBaselineStore();
    const baseline = await runBaseline(sandbox, { baselineStore: store });
    expect(baseline.infrastructure).toBeUndefined();
    expect(baseline).toMatchObject({ runner: 'tap', passed: 3, failed: 1, flaky: [] });
    expect(baseline.preExistingFailures).toEqual(['test/num.js > parse > parses NaN as zero']);
    expect(baseline.command).toContain('tap --reporter=tap && node scripts/lint.js');

    const engine = new SmartFeedbackEngine({ repo: RECIPE.repo, baselineStore: store });
    await sandbox.writeFile('lib/words.js', "'use strict';\nexports.upper = (text) => String(text).toUpperCase();\n");
    const selected = await engine.runTests(sandbox, { scope: 'selected' });
    expect(selected.selectionReason).toContain('passed to tap of `npm test` from package.json');
    expect(selected.command).toContain('test/words.js');
    expect(selected.command).not.toContain('test/num.js');
    expect(selected).toMatchObject({ passed: 2, failed: 0, ok: true, wholeCommand: false });
    // The baseline's coverage data is in .nyc_output/: never in the task's diff.
    expect((await sandbox.exec({ cmd: ['test', '-d', '.nyc_output'] })).exitCode).toBe(0);
    expect((await sandbox.diff()).match(/^diff --git .*$/gm)).toEqual(['diff --git a/lib/words.js b/lib/words.js']);
  });
});
