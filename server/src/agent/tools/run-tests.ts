import { z } from 'zod';
import type { TestReport } from '../../feedback/types';
import { defineTool } from './types';

const RunTestsInput = z.object({
  scope: z
    .enum(['selected', 'full'])
    .default('selected')
    .describe('selected: tests affected by your changes (fast); full: the whole suite'),
});

/** The compact text the model reads for a test run (also used by the verified stop). */
export function describeTestReport(report: TestReport): string {
  const verdict = report.ok ? 'PASSED' : 'FAILED';
  const lines = [
    `Tests ${verdict}: ${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped (${report.scope}: ${report.selectionReason}).`,
    `Command: ${report.command}`,
  ];
  if (report.quarantined.length > 0) lines.push(`Quarantined as flaky (not counted): ${report.quarantined.join(', ')}`);
  if (report.output.trim()) lines.push(report.output.trim());
  return lines.join('\n');
}

export const runTestsTool = defineTool({
  name: 'run_tests',
  description:
    "Run the repository's tests. scope 'selected' runs the tests affected by your changes; 'full' runs the whole " +
    'suite. Returns pass/fail counts and the output of failing tests.',
  input: RunTestsInput,
  async run(input, { sandbox, signal, feedback, events }) {
    const report = await feedback.runTests(sandbox, { scope: input.scope, signal });
    await events.append({ type: 'tests.finished', data: testsFinishedData(report) });
    // Red tests are information, not a tool failure: the call itself worked.
    return { output: describeTestReport(report), isError: false };
  },
});

export function testsFinishedData(report: TestReport) {
  return {
    command: report.command,
    scope: report.scope,
    passed: report.passed,
    failed: report.failed,
    skipped: report.skipped,
    ok: report.ok,
    selectionReason: report.selectionReason,
    quarantined: report.quarantined,
    output: report.output,
    durationMs: report.durationMs,
  };
}
