import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReadinessReport } from '@dockhand/protocol';
import { startServeSession, type ServeSession } from '../support/serve-session';

/*
 * A repository shaped like lukeed/dequal (written here, not fetched): no lockfile, default branch
 * master, `engines: >=6`, a CI matrix of Node 8/10/12/18, and a uvu + esm suite (`uvu -r esm
 * test`) that cannot load under Node 22. `repo check` through `dockhand serve` and the CLI (the
 * bundle), a real gVisor snapshot build (npm install of uvu and esm from the registry through the
 * egress proxy) and the suite at the base: READY on Node 18 from the workflow, with uvu's counts.
 */

const FILES: Record<string, string> = {
  'package.json': `${JSON.stringify(
    { name: 'dequal-shaped', version: '1.0.0', type: 'commonjs', main: 'src/index.js', engines: { node: '>=6' }, scripts: { test: 'uvu -r esm test' }, devDependencies: { esm: '3.2.25', uvu: '0.5.6' } },
    null,
    2,
  )}\n`,
  '.github/workflows/ci.yml': `name: CI
on: [push, pull_request]
jobs:
  test:
    name: Node.js v\${{ matrix.nodejs }}
    runs-on: ubuntu-latest
    strategy:
      matrix:
        nodejs: [8, 10, 12, 18]
    steps:
    - uses: actions/checkout@v3
    - uses: actions/setup-node@v3
      with:
        node-version: \${{ matrix.nodejs }}
    - run: npm install
    - run: npm test
`,
  'src/index.js': `export function dequal(foo, bar) {
  if (foo === bar) return true;
  if (foo && bar && typeof foo === 'object' && typeof bar === 'object' && foo.constructor === bar.constructor) {
    const keys = Object.keys(foo);
    if (keys.length !== Object.keys(bar).length) return false;
    return keys.every((key) => dequal(foo[key], bar[key]));
  }
  return foo !== foo && bar !== bar;
}
`,
  'test/index.js': `import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { dequal } from '../src';

test('scalars', () => { assert.ok(dequal(1, 1)); assert.not.ok(dequal(1, 2)); });
test('NaN', () => { assert.ok(dequal(NaN, NaN)); });
test('objects', () => { assert.ok(dequal({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })); });
test.run();
`,
  'test/arrays.js': `import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { dequal } from '../src';

const Arrays = suite('arrays');
Arrays('equal', () => { assert.ok(dequal([1, 2], [1, 2])); });
Arrays('length', () => { assert.not.ok(dequal([1], [1, 2])); });
Arrays.run();
`,
};

let session: ServeSession | undefined;
let repoDir: string;

const cli = (args: string[]) => {
  if (!session) throw new Error('the server did not start');
  return session.cli(args);
};
const serverOutput = () => session?.serverOutput() ?? '';

beforeAll(async () => {
  repoDir = join(mkdtempSync(join(tmpdir(), 'dockhand-checkout-')), 'dequal-shaped');
  for (const [path, text] of Object.entries(FILES)) {
    mkdirSync(dirname(join(repoDir, path)), { recursive: true });
    writeFileSync(join(repoDir, path), text);
  }
  const git = (...args: string[]) => execFileSync('git', ['-C', repoDir, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { encoding: 'utf8' });
  git('init', '-q', '-b', 'master');
  git('add', '-A');
  git('commit', '-q', '-m', 'dequal-shaped');
  session = await startServeSession({ name: 'uvu-repo', replaySession: 'uvu-repo', cliTimeoutMs: 12 * 60_000 });
}, 10 * 60_000);

afterAll(async () => {
  await session?.stop();
  if (repoDir) rmSync(resolve(repoDir, '..'), { recursive: true, force: true });
});

describe('a dequal-shaped repository (no lockfile, master, engines >=6, CI matrix 8-18, uvu -r esm)', () => {
  it('repo check: READY on the Node 18 its CI names, with uvu counting the tests', async () => {
    const added = await cli(['repo', 'add', 'dequal-shaped', '--from', repoDir]);
    expect(added.code, added.output).toBe(0);
    const checked = await cli(['repo', 'check', 'dequal-shaped', '--json']);
    expect(checked.code, `${checked.output}\n--- server ---\n${serverOutput().slice(-3000)}`).toBe(0);
    const report = ReadinessReport.parse(JSON.parse(checked.output));
    expect(report.environment?.node?.version).toMatch(/^18\.\d+\.\d+$/);
    expect(report.environment?.node?.source).toBe('.github/workflows/ci.yml matrix.nodejs: 8, 10, 12, 18 (newest published, within engines)');
    expect(report.environment?.packageManager).toMatchObject({ name: 'npm', source: 'default (no lockfile)' });
    expect(report.tests).toMatchObject({ ok: true, runner: 'uvu', passed: 5, failed: 0 });
    expect(report).toMatchObject({ ready: true, blocking: [] });
    const table = await cli(['repo', 'check', 'dequal-shaped']);
    process.stdout.write(`${table.output}\n`);
    expect(table.output).toMatch(/node 18\.\d+\.\d+ \(\.github\/workflows\/ci\.yml matrix\.nodejs/);
    expect(table.output).toMatch(/dequal-shaped at [0-9a-f]{12} \(the head of master at \S+dequal-shaped\): READY/);
  }, 25 * 60_000);
});
