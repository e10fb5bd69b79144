import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSnapshotSandboxes, type SnapshotSandboxes } from '../../../test/support/snapshot-sandbox';
import type { Sandbox } from '../sandbox/types';
import { SmartFeedbackEngine } from './engine';
import { InMemoryFlakyStore } from './flaky';

/*
 * The feedback engine inside a real gVisor sandbox of `dockhand/base:latest` (node 18, python3 +
 * pytest): the base commit is read out of the container, the selected suites run in it, results
 * come back parsed. No mocks: Docker, runsc, git and the runners are the real ones.
 */

let sandboxes: SnapshotSandboxes;

/** A sandbox of the fixture's image (the base image plus the fixture checked out in /workspace, the way a snapshot holds it). */
async function sandboxFor(name: 'tia-ts' | 'tia-py'): Promise<{ sandbox: Sandbox; edit: (file: string, from: string, to: string) => Promise<void> }> {
  const sandbox = await sandboxes.create({ name: `feedback-${name}`, repo: { fixture: name } }, { task: `feedback-int-${name}` });
  const edit = async (file: string, from: string, to: string): Promise<void> => {
    const text = (await sandbox.readFile(file)).toString('utf8');
    if (!text.includes(from)) throw new Error(`${file} has no ${from}`);
    await sandbox.writeFile(file, text.replace(from, to));
  };
  return { sandbox, edit };
}

beforeAll(async () => {
  sandboxes = await startSnapshotSandboxes('feedback-int');
});

afterAll(async () => {
  await sandboxes?.close();
});

describe('SmartFeedbackEngine inside gVisor', () => {
  it('selects, runs (node 18 test runner) and catches a planted bug in the JS fixture', async () => {
    const { sandbox, edit } = await sandboxFor('tia-ts');
    await edit('src/math.js', 'return a + b;', 'return a - b;');
    const engine = new SmartFeedbackEngine({ repo: 'fixture/tia-ts' });
    const analysis = await engine.analyze(sandbox);
    expect(analysis.selection).toMatchObject({ mode: 'selected', tests: ['test/cart.test.js', 'test/math.test.js', 'test/report.test.js'] });
    const report = await engine.runTests(sandbox, { scope: 'selected' });
    expect(report.ok).toBe(false);
    expect(report.cases.filter((c) => c.outcome === 'failed').map((c) => c.id)).toContain('test/math.test.js > add sums two numbers');
    expect(report.cases.some((c) => c.file === 'test/strings.test.js')).toBe(false);
    expect(report.passed).toBe(1);
  });

  it('selects by name through the package, catches the bug with pytest and quarantines a flaky test', async () => {
    const { sandbox, edit } = await sandboxFor('tia-py');
    await edit('shop/pricing.py', '(100 - percent)', '(100 + percent)');
    await sandbox.writeFile(
      'tests/test_flaky.py',
      'import os\n\n\ndef test_sometimes():\n    if not os.path.exists("/tmp/flaky-marker"):\n        open("/tmp/flaky-marker", "w").close()\n        assert False, "first run fails"\n',
    );
    const store = new InMemoryFlakyStore();
    const engine = new SmartFeedbackEngine({ repo: 'fixture/tia-py', flakyStore: store });
    const report = await engine.runTests(sandbox, { scope: 'selected' });
    expect(report.selectionReason).toContain('3 of 4 test files');
    expect(report.command).toBe('python3 -m pytest -q -rA --tb=short -p no:cacheprovider tests/test_flaky.py tests/test_pricing.py tests/test_report.py');
    expect(report).toMatchObject({ ok: false, failed: 1, quarantined: ['tests/test_flaky.py::test_sometimes'] });
    expect(report.cases.find((c) => c.outcome === 'failed' && c.id === 'tests/test_pricing.py::test_discount')).toBeDefined();
    expect((await store.list('fixture/tia-py')).map((t) => t.testId)).toEqual(['tests/test_flaky.py::test_sometimes']);
    expect(await sandbox.diff()).not.toContain('__pycache__');
  });

  it('reports syntax errors from the checkers the image has (py_compile, node --check)', async () => {
    const py = await sandboxFor('tia-py');
    await py.edit('shop/pricing.py', 'def discount(price, percent):', 'def discount(price, percent)');
    const pyDiagnostics = await new SmartFeedbackEngine({ repo: 'fixture/tia-py' }).diagnostics(py.sandbox);
    expect(pyDiagnostics).toContainEqual(expect.objectContaining({ tool: 'py_compile', path: 'shop/pricing.py', line: 8, severity: 'error' }));

    const js = await sandboxFor('tia-ts');
    await js.edit('src/strings.js', 'return text.charAt(0)', 'return text.charAt(0) +');
    const jsDiagnostics = await new SmartFeedbackEngine({ repo: 'fixture/tia-ts' }).diagnostics(js.sandbox);
    expect(jsDiagnostics).toContainEqual(expect.objectContaining({ tool: 'node_check', path: 'src/strings.js', severity: 'error' }));
  });
});
