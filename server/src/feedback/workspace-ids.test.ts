import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compactOutput } from './report-output';
import { parseTestOutput } from './runners';
import type { SuiteRun } from './suite-run';
import type { TestReport } from './types';

/*
 * Two workspace members whose tape suites are the same file (testdata/tape.tap, real tape 5.10
 * output, printed as each member's runner prints it from its own directory): tape names no file
 * in its ids, so without the member they would be one test.
 */
const data = (name: string) => readFileSync(join(import.meta.dirname, 'testdata', name), 'utf8');
const memberTap = (dir: string) => data('tape.tap').replaceAll('/workspace/test/', `/workspace/${dir}/test/`);
const files = new Set(['package.json', 'packages/a/package.json', 'packages/a/test/a.test.js', 'packages/b/package.json', 'packages/b/test/a.test.js', 'test/a.test.js']);

describe('test ids in a workspace carry the member', () => {
  it("prefixes the member's directory to ids without a file, for passing and failing tests alike", () => {
    const a = parseTestOutput('tape', memberTap('packages/a'), files, 'packages/a');
    const b = parseTestOutput('tape', memberTap('packages/b'), files, 'packages/b');
    expect(a.cases.map((testCase) => testCase.id).slice(0, 3)).toEqual(['packages/a > adds > should be strictly equal', 'packages/a > adds > two and two', 'packages/a > subtracts > three minus one']);
    expect(a.cases[2]).toMatchObject({ outcome: 'failed', file: 'packages/a/test/a.test.js' });
    expect(a.failures[0]).toMatch(/^✗ packages\/a > subtracts > three minus one\n/);
    const ids = new Set([...a.cases, ...b.cases].map((testCase) => testCase.id));
    expect(ids.size).toBe(a.cases.length + b.cases.length);
  });

  it('leaves ids that already start with a path in the member, and every id outside a workspace, as they were', () => {
    const root = parseTestOutput('tape', data('tape.tap'), files);
    expect(root.cases.map((testCase) => testCase.id)[2]).toBe('subtracts > three minus one');
    expect(root.failures[0]).toMatch(/^✗ subtracts > three minus one\n/);
    const vitest = parseTestOutput('vitest', data('vitest.json').replaceAll('/workspace/', '/workspace/packages/a/'), new Set([...files, 'packages/a/test/a.spec.js', 'packages/a/test/a.test.js', 'packages/a/test/b.test.js', 'packages/a/test/broken.test.js']), 'packages/a');
    expect(vitest.cases.length).toBeGreaterThan(0);
    for (const testCase of vitest.cases) expect(testCase.id.startsWith('packages/a/')).toBe(true);
  });

  it("a quarantined member test is left out of the model's output by its prefixed id", () => {
    const a = parseTestOutput('tape', memberTap('packages/a'), files, 'packages/a');
    const b = parseTestOutput('tape', memberTap('packages/b'), files, 'packages/b');
    const run = (parsed: typeof a): SuiteRun => ({ plan: { runner: 'tape', command: 'tape', script: 'tape', before: [], after: [] }, cases: parsed.cases, failures: parsed.failures, exitCode: 1, timedOut: false, steps: [] });
    const report: TestReport = { command: 'npm test', ok: false, passed: 10, failed: 2, skipped: 2, scope: 'full', selectionReason: 'full suite', quarantined: ['packages/a > subtracts > three minus one'], output: '', durationMs: 1, cases: [] };
    const output = compactOutput(report, [run(a), run(b)], new Set(['packages/a > subtracts > three minus one']), new Set(), [], 10_000);
    expect(output).toContain('✗ packages/b > subtracts > three minus one');
    expect(output).not.toContain('✗ packages/a > subtracts');
  });
});
