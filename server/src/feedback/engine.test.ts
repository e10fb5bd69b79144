import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFixtureRepo } from '../../../test/support/fixture-repo';
import { temporaryDir } from '../../../test/support/temporary-dirs';
import type { ExecOptions } from '../sandbox/types';
import { feedbackVerdict } from './checks';
import { SmartFeedbackEngine } from './engine';
import { InMemoryFlakyStore } from './flaky';
import { GraphCache } from './graph';
import { HostSandbox } from '../sandbox/testing/host-sandbox';

/*
 * The engine end to end on the fixture repos, through a host-directory sandbox double (node 20 and
 * python3 + pytest of the host). The same scenarios run inside gVisor in engine.int.test.ts.
 */

const ROOT_BIN = resolve(import.meta.dirname, '../../../node_modules/.bin');

function workspace(name: 'tia-ts' | 'tia-py') {
  const repo = createFixtureRepo(name);
  const sandbox = new HostSandbox(repo.path, repo.sha, [ROOT_BIN]);
  const edit = (file: string, from: string, to: string): void => {
    const path = join(repo.path, file);
    const text = readFileSync(path, 'utf8');
    if (!text.includes(from)) throw new Error(`fixture ${file} has no ${from}`);
    writeFileSync(path, text.replace(from, to));
  };
  const write = (file: string, text: string): void => writeFileSync(join(repo.path, file), text);
  return { repo, sandbox, edit, write };
}

async function selectionOf(name: 'tia-ts' | 'tia-py', change: (w: ReturnType<typeof workspace>) => void) {
  const w = workspace(name);
  change(w);
  return (await new SmartFeedbackEngine({ repo: name }).analyze(w.sandbox)).selection;
}

describe('test-impact analysis on the TypeScript/JavaScript fixture', { timeout: 120_000 }, () => {
  it('a change in one module selects only its dependents’ tests (static and dynamic imports)', async () => {
    const strings = await selectionOf('tia-ts', (w) => w.edit('src/strings.js', 'toUpperCase()', 'toLowerCase()'));
    expect(strings).toMatchObject({ mode: 'selected', tests: ['test/report.test.js', 'test/strings.test.js'] });
    const math = await selectionOf('tia-ts', (w) => w.edit('src/math.js', 'a * b', 'a * b * 1'));
    expect(math).toMatchObject({ mode: 'selected', tests: ['test/cart.test.js', 'test/math.test.js', 'test/report.test.js'] });
  });

  it('follows package.json "imports" (#util/*)', async () => {
    const clamp = await selectionOf('tia-ts', (w) => w.edit('src/util/clamp.js', 'value))', 'value) + 0)'));
    expect(clamp).toMatchObject({ mode: 'selected', tests: ['test/cart.test.js'] });
  });

  it('config, data and unreachable changes fall back to the full suite and say why', async () => {
    const config = await selectionOf('tia-ts', (w) => w.edit('package.json', '"private": true', '"private": true, "version": "1.0.0"'));
    expect(config.mode).toBe('full');
    expect(config.reason).toContain('package.json');
    const data = await selectionOf('tia-ts', (w) => w.edit('data/limits.json', '99', '98'));
    expect(data).toMatchObject({ mode: 'full' });
    expect(data.reason).toContain('data/limits.json');
    const orphan = await selectionOf('tia-ts', (w) => w.edit('src/orphan.js', '42', '43'));
    expect(orphan).toEqual({ mode: 'full', reason: 'no test reaches src/orphan.js: full suite' });
  });

  it('a planted bug is caught by its selection, and only the affected tests ran', async () => {
    const w = workspace('tia-ts');
    w.edit('src/math.js', 'return a + b;', 'return a - b;');
    const report = await new SmartFeedbackEngine({ repo: 'tia-ts' }).runTests(w.sandbox, { scope: 'selected' });
    expect(report.ok).toBe(false);
    expect(report.command).toContain('for file in test/cart.test.js test/math.test.js test/report.test.js; do');
    const failing = report.cases.filter((c) => c.outcome === 'failed').map((c) => c.id).sort();
    expect(failing).toEqual([
      'test/cart.test.js > cartTotal adds price times quantity',
      'test/cart.test.js > cartTotal clamps quantities',
      'test/math.test.js > add sums two numbers',
      'test/report.test.js > reportLine formats a title',
    ]);
    expect(report.cases.some((c) => c.file === 'test/strings.test.js')).toBe(false);
    expect(report.output).toContain('reran 4 failing test(s) once: 0 passed');
    expect(report.output).toContain('-1 !== 5');
    expect(feedbackVerdict(report, []).green).toBe(false);
  });

  it('a flaky test (fails, then passes on the same code) is quarantined, reported, listable and clearable', async () => {
    const w = workspace('tia-ts');
    const marker = join(temporaryDir('dockhand-flaky-'), 'ran-once');
    w.write(
      'test/flaky.test.js',
      `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
test('sometimes fails', () => {
  if (!existsSync(${JSON.stringify(marker)})) {
    writeFileSync(${JSON.stringify(marker)}, 'x');
    assert.fail('first run fails');
  }
});
`,
    );
    const store = new InMemoryFlakyStore();
    const engine = new SmartFeedbackEngine({ repo: 'acme/tia-ts', flakyStore: store });
    const first = await engine.runTests(w.sandbox, { scope: 'selected' });
    expect(first.ok).toBe(true);
    expect(first.quarantined).toEqual(['test/flaky.test.js > sometimes fails']);
    expect(first.output).toContain('1 passed (quarantined as flaky)');
    const listed = await store.list('acme/tia-ts');
    expect(listed.map((t) => [t.testId, t.history.map((h) => h.outcome)])).toEqual([['test/flaky.test.js > sometimes fails', ['failed', 'passed']]]);
    expect(listed[0]?.history[0]?.diffHash).toBe(listed[0]?.history[1]?.diffHash);

    // Once quarantined, its failure no longer decides: make it fail for real and stay green.
    rmSync(marker);
    w.write('test/flaky.test.js', `import { test } from 'node:test';\nimport assert from 'node:assert/strict';\ntest('sometimes fails', () => assert.fail('always'));\n`);
    const second = await engine.runTests(w.sandbox, { scope: 'selected' });
    expect(second.ok).toBe(true);
    expect(second.failed).toBe(0);
    expect(second.quarantined).toEqual(['test/flaky.test.js > sometimes fails']);

    expect(await store.clear('acme/tia-ts')).toBe(1);
    const third = await engine.runTests(w.sandbox, { scope: 'selected' });
    expect(third.ok).toBe(false);
  });

  it('a test that passes on its rerun only because its first run changed the workspace is not judged flaky', async () => {
    // The set of changed files stays the same (state.txt was already there): only a file's bytes
    // tell the workspace before the first run from the one the rerun saw.
    const w = workspace('tia-ts');
    w.write('test/state.txt', 'before\n');
    w.write(
      'test/writes.test.js',
      `import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
test('needs its state written', () => {
  const state = new URL('./state.txt', import.meta.url);
  if (readFileSync(state, 'utf8') === 'before\\n') {
    writeFileSync(state, 'after\\n');
    assert.fail('state was not written yet');
  }
});
`,
    );
    const store = new InMemoryFlakyStore();
    const report = await new SmartFeedbackEngine({ repo: 'acme/tia-ts', flakyStore: store }).runTests(w.sandbox, { scope: 'selected' });
    expect(report.output).toContain('workspace changed during the run: no flakiness judged');
    expect(report.ok).toBe(false);
    expect(report.quarantined).toEqual([]);
    expect(await store.list('acme/tia-ts')).toEqual([]);
  });

  it('a type error introduced by an edit comes back as a tsc diagnostic and turns the verdict red', async () => {
    const w = workspace('tia-ts');
    w.edit('src/cart.js', 'total = add(total,', "total = add('zero',");
    const engine = new SmartFeedbackEngine({ repo: 'tia-ts' });
    const diagnostics = await engine.diagnostics(w.sandbox);
    const tsc = diagnostics.filter((d) => d.tool === 'tsc');
    expect(tsc).toEqual([expect.objectContaining({ path: 'src/cart.js', line: 7, severity: 'error', message: expect.stringContaining('TS2345') })]);
    const report = await engine.runTests(w.sandbox, { scope: 'selected' });
    expect(feedbackVerdict(report, diagnostics)).toMatchObject({ green: false, reasons: [expect.any(String), expect.stringContaining('src/cart.js:7')] });
  });
});

describe('test-impact analysis on the Python fixture', { timeout: 120_000 }, () => {
  it('a function-body change selects tests that name it through the package, not the others', async () => {
    const pricing = await selectionOf('tia-py', (w) => w.edit('shop/pricing.py', '(100 - percent)', '(100 - percent * 1)'));
    expect(pricing).toMatchObject({ mode: 'selected', tests: ['tests/test_pricing.py', 'tests/test_report.py'] });
  });

  it('an import-time change selects every importer', async () => {
    const rate = await selectionOf('tia-py', (w) => w.edit('shop/pricing.py', 'TAX_RATE = 0.2', 'TAX_RATE = 0.25'));
    expect(rate).toMatchObject({ mode: 'selected', tests: ['tests/test_inventory.py', 'tests/test_pricing.py', 'tests/test_report.py'] });
    expect(rate.reason).toContain('import-time change');
  });

  it('conftest, data and unreachable modules fall back to the full suite', async () => {
    expect(await selectionOf('tia-py', (w) => w.edit('tests/conftest.py', '3)', '4)'))).toMatchObject({ mode: 'full', reason: 'tests/conftest.py (pytest conftest) changed: full suite' });
    expect(await selectionOf('tia-py', (w) => w.edit('data/rates.csv', '0.2', '0.3'))).toMatchObject({ mode: 'full' });
    expect(await selectionOf('tia-py', (w) => w.edit('shop/unused.py', 'no test', 'nothing'))).toMatchObject({ mode: 'full', reason: 'no test reaches shop/unused.py: full suite' });
  });

  it('a planted bug is caught by the selected pytest run', async () => {
    const w = workspace('tia-py');
    w.edit('shop/pricing.py', '(100 - percent)', '(100 + percent)');
    const report = await new SmartFeedbackEngine({ repo: 'tia-py' }).runTests(w.sandbox, { scope: 'selected' });
    expect(report).toMatchObject({ ok: false, failed: 1, passed: 2 });
    expect(report.command).toBe('python3 -m pytest -q -rA --tb=short -p no:cacheprovider tests/test_pricing.py tests/test_report.py');
    expect(report.cases.find((c) => c.outcome === 'failed')).toMatchObject({ id: 'tests/test_pricing.py::test_discount', message: 'assert 55.0 == 45.0' });
    expect(report.output).toContain('E   assert 55.0 == 45.0');
    // The run left no bytecode or cache behind in the workspace.
    expect(await w.sandbox.diff()).not.toContain('__pycache__');
  });

  it('scope full runs the whole suite; a flaky pytest test is quarantined', async () => {
    const w = workspace('tia-py');
    const marker = join(temporaryDir('dockhand-flaky-'), 'ran-once');
    w.write('tests/test_flaky.py', `import os\n\n\ndef test_sometimes():\n    if not os.path.exists(${JSON.stringify(marker)}):\n        open(${JSON.stringify(marker)}, "w").close()\n        assert False, "first run fails"\n`);
    const store = new InMemoryFlakyStore();
    const report = await new SmartFeedbackEngine({ repo: 'tia-py', flakyStore: store }).runTests(w.sandbox, { scope: 'full' });
    expect(report).toMatchObject({ ok: true, scope: 'full', passed: 5, failed: 0, quarantined: ['tests/test_flaky.py::test_sometimes'] });
    expect((await store.list('tia-py')).map((t) => t.testId)).toEqual(['tests/test_flaky.py::test_sometimes']);
  });

  it('a syntax error comes back as a diagnostic', async () => {
    const w = workspace('tia-py');
    w.edit('shop/pricing.py', 'def discount(price, percent):', 'def discount(price, percent)');
    const diagnostics = await new SmartFeedbackEngine({ repo: 'tia-py' }).diagnostics(w.sandbox);
    expect(diagnostics).toContainEqual(expect.objectContaining({ path: 'shop/pricing.py', line: 8, severity: 'error' }));
  });
});

describe('graph cache', { timeout: 60_000 }, () => {
  it('persists the parsed base per (repo, SHA) and reuses it without reading the base again', async () => {
    const dir = temporaryDir('dockhand-graph-cache-');
    const w = workspace('tia-ts');
    w.edit('src/strings.js', 'toUpperCase()', 'toLowerCase()');
    await new SmartFeedbackEngine({ repo: 'tia-ts', cache: new GraphCache(dir) }).analyze(w.sandbox);
    expect(readdirSync(dir)).toHaveLength(1);

    class NoBaseRead extends HostSandbox {
      override exec(opts: ExecOptions) {
        if (opts.cmd.join(' ').includes('cat-file')) throw new Error('base read again');
        return super.exec(opts);
      }
    }
    const again = new NoBaseRead(w.repo.path, w.repo.sha, [ROOT_BIN]);
    const selection = (await new SmartFeedbackEngine({ repo: 'tia-ts', cache: new GraphCache(dir) }).analyze(again)).selection;
    expect(selection).toMatchObject({ mode: 'selected', tests: ['test/report.test.js', 'test/strings.test.js'] });
  });
});
