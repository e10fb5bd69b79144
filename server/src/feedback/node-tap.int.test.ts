import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npmTestRecipe, startSnapshotSandboxes, type SnapshotSandboxes } from '../../../test/support/snapshot-sandbox';
import { InMemoryBaselineStore } from './baseline';
import { runBaseline, SmartFeedbackEngine } from './engine';

/*
 * A node-tap repository (tap 16.3.10 from the npm registry, .ci/needs/feedback.sh) shaped like
 * npm/ini — `test: tap`, a `posttest` lint — in a real gVisor sandbox of `dockhand/base`: the
 * baseline counts its assertions and names the pre-existing failure `file > test > assertion`,
 * and a selection runs `tap <file>` with coverage off (a part of the suite never covers 100%).
 * Its postlint checks npm's script environment the way template-oss-check does (FINDINGS F19).
 */

let sandboxes: SnapshotSandboxes;

const FILES: Record<string, string> = {
  'package.json': JSON.stringify({ name: 'tap-repo', private: true, scripts: { test: 'tap', posttest: 'npm run lint', lint: 'node scripts/lint.js', postlint: 'node scripts/template-check.js' } }, null, 2),
  // tap 16 writes nyc's coverage data to .nyc_output/ in the workspace on every run; this
  // repository does not ignore it: the snapshot build's .git/info/exclude does (the test image
  // gets it from the same install step, test/support/snapshot-sandbox.ts).
  '.gitignore': 'node_modules/\n',
  'scripts/lint.js': "'use strict';\nconsole.log('lint ok');\n",
  // template-oss-check refuses to run outside npm ('This package requires npm >7.21.1'): so does this, and it wants its own event.
  'scripts/template-check.js': [
    "'use strict';",
    "const { join } = require('node:path');",
    "const env = process.env;",
    "if (!env.npm_config_local_prefix) { console.error('Error: This package requires npm >7.21.1'); process.exit(1); }",
    "const wrong = [['npm_config_local_prefix', process.cwd()], ['npm_lifecycle_event', 'postlint'], ['npm_package_json', join(process.cwd(), 'package.json')], ['npm_package_name', 'tap-repo']].filter(([name, value]) => env[name] !== value);",
    "if (wrong.length > 0) { console.error('wrong: ' + wrong.map(([name]) => name + '=' + env[name]).join(' ')); process.exit(1); }",
    '',
  ].join('\n'),
  'lib/num.js': "'use strict';\nexports.parse = (text) => Number(text);\n",
  'lib/words.js': "'use strict';\nexports.upper = (text) => text.toUpperCase();\n",
  'test/num.js': `'use strict';\nconst t = require('tap');\nconst { parse } = require('../lib/num.js');\nt.test('parse', async (t) => {\n  t.equal(parse('1'), 1, 'parses one');\n  t.equal(parse('NaN'), 0, 'parses NaN as zero');\n});\n`,
  'test/words.js': `'use strict';\nconst t = require('tap');\nconst { upper } = require('../lib/words.js');\nt.test('upper', async (t) => {\n  t.equal(upper('a'), 'A', 'one letter');\n  t.test('longer', async (t) => {\n    t.equal(upper('ab'), 'AB', 'two letters');\n  });\n});\n`,
};

const RECIPE = npmTestRecipe('fixture/node-tap-repo');

beforeAll(async () => {
  sandboxes = await startSnapshotSandboxes('feedback-node-tap-int');
});

afterAll(async () => {
  await sandboxes?.close();
});

describe('node-tap inside gVisor', { timeout: 300_000 }, () => {
  it("reads tap 16's assertions through npm test and its posttest, and runs a selection with coverage off", async () => {
    // The repository with its node_modules (tap 16), committed, as an image the way a snapshot holds it.
    const sandbox = await sandboxes.create({ name: 'node-tap', repo: { files: FILES, message: 'tap repo' }, nodeModules: 'tap16' }, { task: 'feedback-node-tap', environment: RECIPE });

    const store = new InMemoryBaselineStore();
    const baseline = await runBaseline(sandbox, { baselineStore: store });
    expect(baseline.infrastructure).toBeUndefined();
    expect(baseline).toMatchObject({ runner: 'tap', passed: 3, failed: 1, flaky: [] });
    expect(baseline.preExistingFailures).toEqual(['test/num.js > parse > parses NaN as zero']);
    expect(baseline.command).toContain('tap --reporter=tap && node scripts/lint.js && node scripts/template-check.js');

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
