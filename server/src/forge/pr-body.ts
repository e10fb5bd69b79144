import type { ChangeRound } from '@dockhand/protocol';
import { codeSpan, neutralizeInline, neutralizeMarkdown, quoted } from './pr-text';
import { redact } from './redact';
import { visibleCharacters } from '../policy/neutralise';

/**
 * The body of Dockhand's draft PR: what was asked, the proof (test log, collapsed), policy
 * violations a repo owner overrode, what was left out or set aside (quarantined flaky tests),
 * what it cost, and last what the agent says it did. GitHub caps a body at 65,536 characters, so
 * the test log keeps its head and tail within a budget.
 *
 * The server's sections come first, and every word the server did not write (the agent's
 * summary, the ticket title, test names and paths from the repository) is neutralised
 * (`pr-text.ts`): it cannot mention anyone, load an image, link anywhere but https, or open an
 * HTML comment that hides a section. The summary comes last, as a quote under its own heading,
 * so a fake "128 passed" in it reads as the agent's words, below the real figures. After review
 * rounds it tells each round (what the reviewer asked, what the agent said it did), not only the
 * last round's summary, so the cause and the fix of round 1 stay in the PR.
 */

export interface PullRequestReport {
  ticket: { title: string; url?: string; id?: string };
  summary: string;
  /** The review rounds (changeRounds in @dockhand/protocol); with more than one, the agent's section tells each. */
  rounds?: ChangeRound[];
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
  /** Where the server serves this push's signed attestation (its digest is the commit's `Dockhand-Attestation:` trailer). */
  attestation?: { path: string };
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
  const title = neutralizeInline(report.ticket.title);
  const url = report.ticket.url;
  const ticket = url && /^https:\/\/[^\s<>()]+$/.test(url) ? `[${title}](${url})` : title;
  lines.push(`**Ticket:** ${ticket}${report.ticket.id ? ` (#${neutralizeInline(report.ticket.id)})` : ''}`);
  if (report.requester) lines.push(`**Requested by:** ${neutralizeInline(report.requester)}`);
  if (report.allowTestEdits !== undefined) {
    const by = `the requester${report.requester ? ` (${neutralizeInline(report.requester)})` : ''}${report.allowTestEditsLabel ? ` with the issue label ${codeSpan(report.allowTestEditsLabel)}` : ''}`;
    lines.push(`**Test edits:** ${report.allowTestEdits ? `allowed by ${by}` : 'not allowed (existing tests were not changed)'}`);
  }

  if (report.tests) {
    const t = report.tests;
    const skipped = t.skipped ? `, ${t.skipped} skipped` : '';
    const scope = t.scope === 'full' ? ' (full suite)' : t.scope === 'selected' ? ' (tests selected by the change)' : '';
    const preExisting = t.preExisting ?? [];
    const inherited = preExisting.length > 0 ? ` (${preExisting.length} of them pre-existing)` : '';
    lines.push('', '## Tests', '', `${codeSpan(t.command)}${scope}: ${t.passed} passed, ${t.failed} failed${inherited}${skipped}`);
    const reproducing = t.reproducing ?? [];
    if (reproducing.length > 0) {
      lines.push('', "**Reproducing tests** — they fail at the base commit; the ticket is about them, so they had to pass:", '');
      const said = { passed: 'passes', failed: 'fails', not_run: 'did not run in this run' } as const;
      for (const test of reproducing) lines.push(`- ${codeSpan(test.id)}: ${said[test.outcome]}`);
    }
    if (preExisting.length > 0) {
      lines.push('', '**Pre-existing failures** — these fail at the base commit too (run twice before any change), so this change did not cause them:', '');
      for (const test of preExisting) lines.push(`- ${codeSpan(test)}`);
    }
    const log = visibleCharacters(clip(t.log.trimEnd(), TEST_LOG_BUDGET));
    const marker = fence(log);
    lines.push('', '<details><summary>Test log</summary>', '', `${marker}text`, log, marker, '', '</details>');
  }

  if (report.policyOverride) {
    const { by, violations } = report.policyOverride;
    lines.push('', '## Policy overridden', '', `These violations of the repository policy were overridden by ${neutralizeInline(by)}, a repo owner:`, '');
    for (const v of violations) lines.push(`- ${codeSpan(v.rule)}${v.path ? ` ${codeSpan(`${v.path}${v.line ? `:${v.line}` : ''}`)}` : ''}: ${neutralizeInline(v.message)}`);
  }

  if (report.leftOut && report.leftOut.files.length > 0) {
    const { by, files } = report.leftOut;
    lines.push('', '## Left out in review', '', `${by.map(neutralizeInline).join(', ') || 'The reviewer'} did not accept the changes to these files, so they are not in this pull request (the tests ran with them in):`, '');
    for (const path of files) lines.push(`- ${codeSpan(path)}`);
  }

  const quarantined = report.quarantined ?? [];
  if (quarantined.length > 0) {
    lines.push('', '## Quarantined flaky tests', '', 'These failed intermittently and were not counted:', '');
    for (const test of quarantined) lines.push(`- ${codeSpan(test)}`);
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
  if (report.attestation) {
    lines.push('', `**Attestation:** a signed in-toto statement of how this change was made (ticket, base, models, tests, approvals), served by Dockhand at ${codeSpan(`GET ${report.attestation.path}`)}; its sha256 is the commit's ${codeSpan('Dockhand-Attestation:')} trailer, and ${codeSpan('dockhand verify commit')} checks both.`);
  }
  const footer = [report.model ? `model ${neutralizeInline(report.model)}` : '', report.taskId ? `task ${neutralizeInline(report.taskId)}` : ''].filter(Boolean).join(', ');
  lines.push('', `<sub>Opened by Dockhand${footer ? ` (${footer})` : ''}. Review before marking ready.</sub>`);

  // Last, and quoted: the agent's own account. Everything above is the server's.
  const rounds = report.rounds ?? [];
  if (rounds.length > 1) {
    lines.push('', '## Summary, round by round (written by the agent)');
    for (const round of rounds) {
      lines.push('', `**Round ${round.round}**`);
      if (round.requested) {
        const asked = round.requested.comments.map(neutralizeInline).join(' · ') || 'changes';
        const revert = round.requested.revert.length ? ` (and to revert ${round.requested.revert.map(codeSpan).join(', ')})` : '';
        lines.push('', `${neutralizeInline(round.requested.by)} asked: ${asked}${revert}`);
      }
      lines.push('', round.summary ? quoted(neutralizeMarkdown(round.summary)) : '_No summary for this round._');
    }
    lines.push('');
  } else {
    const summary = report.summary.trim();
    lines.push('', '## Summary (written by the agent)', '', summary ? quoted(neutralizeMarkdown(summary)) : '_No summary._', '');
  }

  const body = redact(lines.join('\n'), secrets);
  return body.length > BODY_LIMIT ? `${body.slice(0, BODY_LIMIT - 20)}\n\n… (truncated)\n` : body;
}
