import { redact } from './redact';

/**
 * The body of Dockhand's draft PR: what was asked, what was done, the proof (test log,
 * collapsed), policy violations a repo owner overrode, what it cost, and what was set aside
 * (quarantined flaky tests). GitHub caps a body
 * at 65,536 characters, so the test log keeps its head and tail within a budget.
 */

export interface PullRequestReport {
  ticket: { title: string; url?: string; id?: string };
  summary: string;
  taskId?: string;
  requester?: string;
  /** The last test run before the PR (the full suite, once the verified stop has run it). */
  tests?: {
    command: string;
    passed: number;
    failed: number;
    skipped?: number;
    log: string;
    scope?: 'selected' | 'full';
    /** Failing tests that fail at the base commit too: listed apart, not this change's. */
    preExisting?: string[];
    /** The ticket's reproducing tests (failing at the base) and their outcome in this run. */
    reproducing?: ReadonlyArray<{ id: string; outcome: 'passed' | 'failed' | 'not_run' }>;
  };
  quarantined?: string[];
  usage: { turns: number; inputTokens: number; outputTokens: number; cacheReadTokens?: number; costUsd: number };
  model?: string;
  /** Policy violations a repo owner overrode for this diff: listed so reviewers see the exception. */
  policyOverride?: { by: string; violations: ReadonlyArray<{ rule: string; path: string; line?: number; message: string }> };
  /** Files the reviewer rejected at approval: their changes are not in this PR. */
  leftOut?: { by: string[]; files: string[] };
  /** Whether the requester let the agent change existing tests (never the model's decision). */
  allowTestEdits?: boolean;
  /** The issue label by which the requester allowed it, when it was a label. */
  allowTestEditsLabel?: string;
}

export const TEST_LOG_BUDGET = 40_000;
export const BODY_LIMIT = 65_000;

function clip(text: string, budget: number): string {
  if (text.length <= budget) return text;
  const half = Math.floor(budget / 2);
  const dropped = text.length - 2 * half;
  return `${text.slice(0, half)}\n… ${dropped} characters omitted …\n${text.slice(-half)}`;
}

/** A fence longer than any backtick run in the text, so the log cannot close it early. */
function fence(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((match) => match[0].length));
  return '`'.repeat(longest + 1);
}

function formatNumber(value: number): string {
  return value.toLocaleString('en-US');
}

export function buildPullRequestBody(report: PullRequestReport, secrets: ReadonlyArray<string | undefined> = []): string {
  const lines: string[] = [];
  const ticket = report.ticket.url ? `[${report.ticket.title}](${report.ticket.url})` : report.ticket.title;
  lines.push(`**Ticket:** ${ticket}${report.ticket.id ? ` (#${report.ticket.id})` : ''}`);
  if (report.requester) lines.push(`**Requested by:** ${report.requester}`);
  if (report.allowTestEdits !== undefined) {
    const by = `the requester${report.requester ? ` (${report.requester})` : ''}${report.allowTestEditsLabel ? ` with the issue label \`${report.allowTestEditsLabel}\`` : ''}`;
    lines.push(`**Test edits:** ${report.allowTestEdits ? `allowed by ${by}` : 'not allowed (existing tests were not changed)'}`);
  }
  lines.push('', '## Summary', '', report.summary.trim() || '_No summary._');

  if (report.tests) {
    const t = report.tests;
    const skipped = t.skipped ? `, ${t.skipped} skipped` : '';
    const scope = t.scope === 'full' ? ' (full suite)' : t.scope === 'selected' ? ' (tests selected by the change)' : '';
    const preExisting = t.preExisting ?? [];
    const inherited = preExisting.length > 0 ? ` (${preExisting.length} of them pre-existing)` : '';
    lines.push('', '## Tests', '', `\`${t.command}\`${scope}: ${t.passed} passed, ${t.failed} failed${inherited}${skipped}`);
    const reproducing = t.reproducing ?? [];
    if (reproducing.length > 0) {
      lines.push('', "**Reproducing tests** — they fail at the base commit; the ticket is about them, so they had to pass:", '');
      const said = { passed: 'passes', failed: 'fails', not_run: 'did not run in this run' } as const;
      for (const test of reproducing) lines.push(`- \`${test.id}\`: ${said[test.outcome]}`);
    }
    if (preExisting.length > 0) {
      lines.push('', '**Pre-existing failures** — these fail at the base commit too (run twice before any change), so this change did not cause them:', '');
      for (const test of preExisting) lines.push(`- \`${test}\``);
    }
    const log = clip(t.log.trimEnd(), TEST_LOG_BUDGET);
    const marker = fence(log);
    lines.push('', '<details><summary>Test log</summary>', '', `${marker}text`, log, marker, '', '</details>');
  }

  if (report.policyOverride) {
    const { by, violations } = report.policyOverride;
    lines.push('', '## Policy overridden', '', `These violations of the repository policy were overridden by ${by}, a repo owner:`, '');
    for (const v of violations) lines.push(`- \`${v.rule}\`${v.path ? ` \`${v.path}${v.line ? `:${v.line}` : ''}\`` : ''}: ${v.message}`);
  }

  if (report.leftOut && report.leftOut.files.length > 0) {
    const { by, files } = report.leftOut;
    lines.push('', '## Left out in review', '', `${by.join(', ') || 'The reviewer'} did not accept the changes to these files, so they are not in this pull request (the tests ran with them in):`, '');
    for (const path of files) lines.push(`- \`${path}\``);
  }

  const quarantined = report.quarantined ?? [];
  if (quarantined.length > 0) {
    lines.push('', '## Quarantined flaky tests', '', 'These failed intermittently and were not counted:', '');
    for (const test of quarantined) lines.push(`- \`${test}\``);
  }

  const u = report.usage;
  lines.push(
    '',
    '## Cost',
    '',
    '| turns | input tokens | output tokens | cache reads | cost |',
    '|---|---|---|---|---|',
    `| ${u.turns} | ${formatNumber(u.inputTokens)} | ${formatNumber(u.outputTokens)} | ${formatNumber(u.cacheReadTokens ?? 0)} | $${u.costUsd.toFixed(2)} |`,
  );
  const footer = [report.model ? `model ${report.model}` : '', report.taskId ? `task ${report.taskId}` : ''].filter(Boolean).join(', ');
  lines.push('', `<sub>Opened by Dockhand${footer ? ` (${footer})` : ''}. Review before marking ready.</sub>`, '');

  const body = redact(lines.join('\n'), secrets);
  return body.length > BODY_LIMIT ? `${body.slice(0, BODY_LIMIT - 20)}\n\n… (truncated)\n` : body;
}
