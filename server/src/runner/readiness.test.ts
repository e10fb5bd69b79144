import type { ReadinessReport } from '@dockhand/protocol';
import { describe, expect, it } from 'vitest';
import { testBlockers } from './readiness';

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
  });
});
