import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { RunDirectory, InstanceResult, RunManifest } from './run-dir';
import { attemptFigures, type AttemptFigures } from './attempts';
import { median, sum, wilson } from './stats';

/*
 * A run's report, per repository and overall: resolved share with a 95% Wilson interval (from the
 * grade; without one, "reached review" stands in and says so), cost per task and per resolved
 * task, turns, wall time, tokens and the share read from the prompt cache, policy blocks and
 * refused finishes. Markdown for a PR or a wiki, and one self-contained HTML page (inline SVG,
 * no scripts, no external assets) with the charts.
 */

const GradeFile = z.object({
  instances: z.record(z.string(), z.object({ resolved: z.boolean(), status: z.string(), flaky: z.array(z.string()).default([]) })),
});

export interface GroupFigures {
  name: string;
  instances: number;
  resolved: number;
  resolvedShare: number;
  interval: { low: number; high: number };
  reachedReview: number;
  costUsd: number;
  costPerTaskUsd: number;
  /** null when nothing was resolved. */
  costPerResolvedUsd: number | null;
  medianTurns: number;
  medianWallSeconds: number;
  /** Of the wall time, the median wait for a scheduler slot (many instances, few slots: most of it). */
  medianQueuedSeconds: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  cacheReadShare: number;
  policyBlocks: number;
  refusedFinishes: number;
  invalid: number;
}

export interface EvalReport {
  manifest: RunManifest;
  graded: boolean;
  overall: GroupFigures;
  repos: GroupFigures[];
  rows: Array<InstanceResult & { resolved: boolean; gradeStatus: string; flaky: string[] }>;
  /** Best-of-N runs (`--attempts N`, N > 1): pass@1, pass@N and the extra attempts' cost. */
  attempts?: AttemptFigures;
}

function figures(name: string, rows: EvalReport['rows']): GroupFigures {
  const resolved = rows.filter((row) => row.resolved).length;
  const costUsd = sum(rows.map((row) => row.costUsd));
  const inputTokens = sum(rows.map((row) => row.inputTokens));
  const cacheReadTokens = sum(rows.map((row) => row.cacheReadTokens));
  const cacheWriteTokens = sum(rows.map((row) => row.cacheWriteTokens));
  const prompt = inputTokens + cacheReadTokens + cacheWriteTokens;
  const ran = rows.filter((row) => row.status === 'settled');
  return {
    name,
    instances: rows.length,
    resolved,
    resolvedShare: rows.length ? resolved / rows.length : 0,
    interval: wilson(resolved, rows.length),
    reachedReview: rows.filter((row) => row.reachedReview).length,
    costUsd,
    costPerTaskUsd: ran.length ? costUsd / ran.length : 0,
    costPerResolvedUsd: resolved ? costUsd / resolved : null,
    medianTurns: median(ran.map((row) => row.turns)),
    medianWallSeconds: median(ran.map((row) => row.wallSeconds)),
    medianQueuedSeconds: median(ran.map((row) => row.queuedSeconds ?? 0)),
    inputTokens,
    outputTokens: sum(rows.map((row) => row.outputTokens)),
    cacheReadTokens,
    cacheWriteTokens,
    cacheReadShare: prompt ? cacheReadTokens / prompt : 0,
    policyBlocks: rows.filter((row) => row.policy.blocked).length,
    refusedFinishes: sum(rows.map((row) => row.refusedFinishes)),
    invalid: rows.filter((row) => row.status === 'invalid').length,
  };
}

export function buildReport(dir: RunDirectory, gradeFile?: string): EvalReport {
  const manifest = dir.manifest();
  if (!manifest) throw new Error(`${dir.path} is not a run directory (no run.json)`);
  const grade = gradeFile && existsSync(gradeFile) ? GradeFile.parse(JSON.parse(readFileSync(gradeFile, 'utf8'))) : undefined;
  const rows = dir.results().map((result) => {
    const graded = grade?.instances[result.instance_id];
    return {
      ...result,
      resolved: grade ? graded?.resolved === true : result.reachedReview,
      gradeStatus: graded?.status ?? (grade ? 'not graded' : 'reached review (ungraded)'),
      flaky: graded?.flaky ?? [],
    };
  });
  const names = [...new Set(rows.map((row) => row.repo))].sort();
  return {
    manifest, graded: grade !== undefined, overall: figures('overall', rows), repos: names.map((name) => figures(name, rows.filter((row) => row.repo === name))), rows,
    ...(manifest.attempts > 1 ? { attempts: attemptFigures(manifest.attempts, rows) } : {}),
  };
}

const percent = (share: number) => `${(share * 100).toFixed(1)}%`;
const usd = (value: number | null) => (value === null ? '—' : `$${value.toFixed(4)}`);

function tableRow(group: GroupFigures): string {
  return `| ${group.name} | ${group.instances} | ${group.resolved} (${percent(group.resolvedShare)}, ${percent(group.interval.low)}–${percent(group.interval.high)}) | ${group.reachedReview} | ${usd(group.costPerTaskUsd)} | ${usd(group.costPerResolvedUsd)} | ${group.medianTurns} | ${group.medianWallSeconds.toFixed(1)} s | ${group.medianQueuedSeconds.toFixed(1)} s | ${group.inputTokens + group.cacheReadTokens + group.cacheWriteTokens} / ${group.outputTokens} | ${percent(group.cacheReadShare)} | ${group.policyBlocks} | ${group.refusedFinishes} |`;
}

export function reportMarkdown(report: EvalReport): string {
  const lines = [
    `# Evaluation: ${report.manifest.model} (${report.manifest.mode})`,
    '',
    `Instances: ${report.manifest.instancesFile} · started ${report.manifest.createdAt} · ${report.graded ? 'graded (FAIL_TO_PASS and PASS_TO_PASS in a fresh sandbox)' : 'not graded: "resolved" is "reached review"'}`,
    '',
    '| repository | instances | resolved (95% Wilson) | reached review | cost / task | cost / resolved | median turns | median wall | of it queued | tokens in / out | cache-read share | policy blocks | refused finishes |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...report.repos.map(tableRow),
    tableRow(report.overall).replace('| overall |', '| **overall** |'),
    '',
    ...(report.attempts ? [...attemptLines(report.attempts, report.graded).map((line) => `- ${line}`), ''] : []),
    '## Instances',
    '',
    '| instance | resolved | grade | stopped | turns | cost | wall | policy |',
    '|---|---|---|---|---|---|---|---|',
    ...report.rows.map((row) => `| ${row.instance_id} | ${row.resolved ? 'yes' : 'no'} | ${row.gradeStatus}${row.flaky.length ? ` (flaky: ${row.flaky.join(', ')})` : ''} | ${(row.stopReason ?? (row.reachedReview ? 'reached review' : row.message ?? '')).replace(/\|/g, '\\|').slice(0, 120)} | ${row.turns} | ${usd(row.costUsd)} | ${row.wallSeconds.toFixed(1)} s | ${row.policy.blocked ? `blocked: ${row.policy.violations.join(', ')}` : row.policy.checked ? 'ok' : '—'} |`),
    '',
  ];
  return lines.join('\n');
}

/** Best-of-N in words: pass@1 and pass@N (graded, or "reached review"), and what the extra attempts cost. */
function attemptLines(figures: AttemptFigures, graded: boolean): string[] {
  const of = (count: number) => `${count}/${figures.instances} (${percent(figures.instances ? count / figures.instances : 0)})`;
  const what = graded ? 'resolved' : 'reached review (ungraded)';
  return [
    `Best of ${figures.attempts}: pass@1 ${of(figures.passAt1)}, pass@${figures.attempts} ${of(figures.passAtN)} ${what}; the server chose the first attempt with green verified tests, an approving review and the policy gate passed`,
    `Reached review: attempt 1 ${of(figures.reachedReviewAt1)}, any attempt ${of(figures.reachedReviewAtN)}`,
    `Cost: attempt 1 alone ${usd(figures.firstAttemptCostUsd)}, all ${figures.attempts} attempts ${usd(figures.allAttemptsCostUsd)} (extra ${usd(figures.allAttemptsCostUsd - figures.firstAttemptCostUsd)}; per instance the extra attempts resolved: ${usd(figures.extraCostPerExtraResolvedUsd)})`,
  ];
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (char) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[char] ?? char);
}

/** Horizontal bars, one per group, with an optional interval whisker. */
function barChart(title: string, groups: Array<{ label: string; value: number; low?: number; high?: number; text: string }>, max: number): string {
  const rowHeight = 26;
  const width = 640;
  const labelWidth = 200;
  const scale = (value: number) => (max > 0 ? ((width - labelWidth - 90) * value) / max : 0);
  const rows = groups.map((group, index) => {
    const y = 30 + index * rowHeight;
    const whisker = group.low !== undefined && group.high !== undefined
      ? `<line x1="${labelWidth + scale(group.low)}" x2="${labelWidth + scale(group.high)}" y1="${y + 9}" y2="${y + 9}" stroke="#222" stroke-width="2"/>`
      : '';
    return `<text x="${labelWidth - 8}" y="${y + 13}" text-anchor="end">${escapeHtml(group.label)}</text><rect x="${labelWidth}" y="${y}" width="${Math.max(1, scale(group.value))}" height="18" fill="#4a78c2"/>${whisker}<text x="${labelWidth + scale(Math.max(group.value, group.high ?? 0)) + 6}" y="${y + 13}">${escapeHtml(group.text)}</text>`;
  });
  return `<figure><svg role="img" aria-label="${escapeHtml(title)}" width="${width}" height="${40 + groups.length * rowHeight}" font-family="sans-serif" font-size="12"><text x="0" y="16" font-weight="bold">${escapeHtml(title)}</text>${rows.join('')}</svg></figure>`;
}

export function reportHtml(report: EvalReport): string {
  const groups = [...report.repos, report.overall];
  const markdownTable = reportMarkdown(report).split('\n').filter((line) => line.startsWith('|'));
  const table = (start: number, end: number) => {
    const slice = markdownTable.slice(start, end).filter((line) => !/^\|---/.test(line));
    const cells = (line: string) => line.slice(1, -1).split(/(?<!\\)\|/).map((cell) => escapeHtml(cell.trim().replace(/\\\|/g, '|').replace(/\*\*/g, '')));
    const [head, ...body] = slice;
    return `<table><thead><tr>${cells(head ?? '').map((cell) => `<th>${cell}</th>`).join('')}</tr></thead><tbody>${body.map((line) => `<tr>${cells(line).map((cell) => `<td>${cell}</td>`).join('')}</tr>`).join('')}</tbody></table>`;
  };
  const summaryRows = report.repos.length + 3;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Dockhand evaluation: ${escapeHtml(report.manifest.model)}</title>
<style>body{font-family:sans-serif;margin:2rem;max-width:72rem}table{border-collapse:collapse;margin:1rem 0;font-size:13px}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}th{background:#f3f3f3}figure{margin:1rem 0}</style></head>
<body><h1>Evaluation: ${escapeHtml(report.manifest.model)} (${escapeHtml(report.manifest.mode)})</h1>
<p>${escapeHtml(report.manifest.instancesFile)} · started ${escapeHtml(report.manifest.createdAt)} · ${report.graded ? 'graded in fresh sandboxes' : 'not graded: resolved means reached review'}</p>
${barChart('Resolved share (95% Wilson interval)', groups.map((group) => ({ label: group.name, value: group.resolvedShare, low: group.interval.low, high: group.interval.high, text: `${percent(group.resolvedShare)} (${group.resolved}/${group.instances})` })), 1)}
${barChart('Cost per task (USD)', groups.map((group) => ({ label: group.name, value: group.costPerTaskUsd, text: usd(group.costPerTaskUsd) })), Math.max(...groups.map((group) => group.costPerTaskUsd), 0.0001))}
${barChart('Cost per resolved task (USD)', groups.map((group) => ({ label: group.name, value: group.costPerResolvedUsd ?? 0, text: usd(group.costPerResolvedUsd) })), Math.max(...groups.map((group) => group.costPerResolvedUsd ?? 0), 0.0001))}
${barChart('Median wall time per task (s)', groups.map((group) => ({ label: group.name, value: group.medianWallSeconds, text: `${group.medianWallSeconds.toFixed(1)} s` })), Math.max(...groups.map((group) => group.medianWallSeconds), 1))}
${barChart('Share of prompt tokens read from the cache', groups.map((group) => ({ label: group.name, value: group.cacheReadShare, text: percent(group.cacheReadShare) })), 1)}
<h2>By repository</h2>${table(0, summaryRows)}
${report.attempts ? `<h2>Best of ${report.attempts.attempts}</h2><ul>${attemptLines(report.attempts, report.graded).map((line) => `<li>${escapeHtml(line)}</li>`).join('')}</ul>` : ''}
<h2>Instances</h2>${table(summaryRows, markdownTable.length)}
</body></html>
`;
}

export function writeReportFiles(dir: RunDirectory, report: EvalReport): { markdown: string; html: string } {
  return { markdown: dir.write('report.md', reportMarkdown(report)), html: dir.write('report.html', reportHtml(report)) };
}

export function gradeFileOf(dir: RunDirectory): string | undefined {
  const file = join(dir.path, 'grade.json');
  return existsSync(file) ? file : undefined;
}
