import { changeRounds, type PullRequestView, type TaskEvent } from '@dockhand/protocol';
import * as vscode from 'vscode';
import type { DockhandState } from './dockhand-state';

/*
 * "Open pull request": a GitHub PR opens in the browser; a PR on the server's local forge
 * (`dockhand-local://…`, which no browser opens) is shown inside VS Code in an editor tab titled
 * by the PR ("PR #3: Add farewell"): the change round by round (what the agent said it did, and
 * what the reviewer asked for before each later round), the head commit, the checks and the
 * changed files, with the Changes view beside it for the diffs. It is plain HTML written here, so
 * it shows at once (the Markdown preview it replaced stayed blank for ~10 s while the Markdown
 * extension started, and titled itself "Preview pull request t_<uuid>.md"). The self-review's
 * verdict is one of the checks, not the description.
 */

export interface PullRequestPage {
  /** The editor tab's title: "PR #3: Add farewell". */
  title: string;
  html: string;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

const code = (text: string) => `<code>${escapeHtml(text)}</code>`;

/**
 * The PR view for a task whose PR is open; undefined before `pr.opened`. `forge`: what the forge
 * holds on the PR (its conversation and the checks on its head), once the server answered.
 */
export function renderPullRequest(title: string, events: readonly TaskEvent[], forge?: PullRequestView): PullRequestPage | undefined {
  const opened = events.findLast((event) => event.type === 'pr.opened');
  if (opened?.type !== 'pr.opened') return undefined;
  const heading = `PR #${opened.data.number}: ${title}`;
  const body: string[] = [`<h1>${escapeHtml(heading)}</h1>`, `<p class="meta">${code(opened.data.branch)} at ${code(opened.data.headSha.slice(0, 12))} · ${escapeHtml(opened.data.url)}</p>`];

  // The story of the change round by round, as the server's PR body tells it.
  const rounds = changeRounds(events.filter((event) => event.seq < opened.seq));
  body.push('<h2>What changed</h2>');
  if (!rounds.length) body.push('<p class="muted">The agent left no summary.</p>');
  for (const round of rounds) {
    if (rounds.length > 1) body.push(`<h3>Round ${round.round}</h3>`);
    if (round.requested) {
      const asked = round.requested.comments.length ? round.requested.comments.join(' · ') : 'changes';
      const revert = round.requested.revert.length ? ` (and to revert ${round.requested.revert.map(code).join(', ')})` : '';
      body.push(`<p class="asked">${escapeHtml(round.requested.by)} asked: ${escapeHtml(asked)}${revert}</p>`);
    }
    body.push(round.summary ? `<blockquote class="summary">${escapeHtml(round.summary)}</blockquote>` : '<p class="muted">No summary for this round.</p>');
  }

  const checks: string[] = [];
  const tests = events.findLast((event) => event.type === 'tests.finished');
  if (tests?.type === 'tests.finished') {
    const pre = tests.data.preExisting?.length ? ` (${tests.data.preExisting.length} already failing at the base)` : '';
    checks.push(`${tests.data.ok ? '✓' : '✗'} Tests: ${tests.data.passed} passed, ${tests.data.failed} failed${escapeHtml(pre)} — ${code(tests.data.command)}`);
  }
  const policy = events.findLast((event) => event.type === 'policy.checked');
  if (policy?.type === 'policy.checked') {
    checks.push(escapeHtml(policy.data.ok ? '✓ Policy checks passed' : policy.data.overridden ? `⚠ Policy overridden by ${policy.data.overriddenBy ?? 'a repo owner'}` : '✗ Policy checks failed'));
  }
  const review = events.findLast((event) => event.type === 'review.finished');
  if (review?.type === 'review.finished') checks.push(review.data.approved ? '✓ Self-review approved' : '⚠ Self-review found problems');
  if (checks.length) body.push('<h2>Checks</h2>', `<ul>${checks.map((check) => `<li>${check}</li>`).join('')}</ul>`);

  const files = new Map<string, string>();
  for (const event of events) if (event.type === 'file.changed') files.set(event.data.path, event.data.change);
  // Files the approval left out are not in the PR (the server pushed the rest).
  const leftOut = leftOutOfPush(events, opened.seq);
  for (const path of leftOut) files.delete(path);
  const sorted = [...files].sort(([a], [b]) => a.localeCompare(b));
  body.push(`<h2>Changed files (${files.size})</h2>`, `<ul>${sorted.map(([path, change]) => `<li>${code(path)} (${escapeHtml(change)})</li>`).join('')}</ul>`);
  if (leftOut.length) body.push('<h2>Left out in review</h2>', '<p>Not in this pull request; the tests ran with them in:</p>', `<ul>${leftOut.map((path) => `<li>${code(path)}</li>`).join('')}</ul>`);
  if (forge) body.push(...forgeSections(forge));
  body.push('<p class="muted">Open a file\'s diff from the Dockhand <strong>Changes</strong> view.</p>');
  return { title: heading, html: page(heading, body.join('\n')) };
}

const CONCLUSION_MARKS: Record<PullRequestView['checks'][number]['conclusion'], string> = {
  success: '✓', failure: '✗', timed_out: '✗ timed out', cancelled: '✗ cancelled', neutral: '–', skipped: '– skipped',
};

/**
 * The PR's conversation as the forge has it (comments on lines and on the PR, reviews, replies:
 * who wrote each, whether it steered Dockhand or was ignored and why, the commit that addressed
 * it) and the checks on its head commit: what started each follow-up round, in one place.
 */
function forgeSections(forge: PullRequestView): string[] {
  const out: string[] = [];
  const head = forge.checks.filter((check) => check.sha === forge.pr.headSha);
  out.push(`<h2>Checks reported on ${code(forge.pr.headSha.slice(0, 12))} (${head.length})</h2>`);
  if (!head.length) out.push('<p class="muted">None reported on the head commit yet.</p>');
  else out.push(`<ul>${head.map((check) => `<li>${escapeHtml(CONCLUSION_MARKS[check.conclusion])} ${escapeHtml(check.name)} <span class="muted">(by ${escapeHtml(check.postedBy)})</span></li>`).join('')}</ul>`);
  out.push(`<h2>Conversation (${forge.comments.length})</h2>`);
  if (!forge.comments.length) out.push('<p class="muted">No comments or reviews yet.</p>');
  for (const comment of forge.comments) {
    const verdict = comment.verdict === 'request_changes' ? ' requested changes' : comment.verdict === 'approve' ? ' approved' : comment.inReplyTo ? ' replied' : ' commented';
    const where = comment.path ? ` on ${code(`${comment.path}${comment.line ? `:${comment.line}` : ''}`)}` : '';
    const status = comment.steering === 'ignored'
      ? ` · <strong>ignored</strong>${comment.ignoredBecause ? `: ${escapeHtml(comment.ignoredBecause)}` : ''}`
      : comment.resolvedBy ? ` · addressed in ${code(comment.resolvedBy.slice(0, 12))}` : '';
    out.push(`<p class="asked"><strong>${escapeHtml(comment.author)}</strong>${verdict}${where}${status}</p>`);
    if (comment.body.trim()) out.push(`<blockquote>${escapeHtml(comment.body)}</blockquote>`);
  }
  return out;
}

function page(title: string, body: string): string {
  // No script; styles inline under a CSP that allows nothing else. Colours from the theme.
  return `<!DOCTYPE html><html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>${escapeHtml(title)}</title><style>
body { font-family: var(--vscode-font-family); font-size: var(--vscode-font-size); color: var(--vscode-foreground); padding: 0 24px 24px; max-width: 880px; line-height: 1.5; }
h1 { font-size: 1.6em; border-bottom: 1px solid var(--vscode-panel-border, transparent); padding-bottom: 4px; }
h2 { font-size: 1.25em; margin-top: 1.2em; }
h3 { font-size: 1.05em; margin: 0.8em 0 0.2em; }
code { font-family: var(--vscode-editor-font-family); background: var(--vscode-textCodeBlock-background); padding: 0 3px; border-radius: 3px; }
blockquote { margin: 0.3em 0; padding: 2px 10px; border-left: 3px solid var(--vscode-textBlockQuote-border, var(--vscode-focusBorder)); background: var(--vscode-textBlockQuote-background); white-space: pre-wrap; }
.asked { margin: 0.2em 0; }
.meta, .muted { color: var(--vscode-descriptionForeground); }
</style></head><body>${body}</body></html>`;
}

/** Files the approvals of the round that led to the push left out (after its last move to review). */
function leftOutOfPush(events: readonly TaskEvent[], before: number): string[] {
  let start = 0;
  for (const event of events) if (event.seq < before && event.type === 'task.state' && event.data.state === 'awaiting_review') start = event.seq;
  const files = new Set<string>();
  for (const event of events) {
    if (event.seq > start && event.seq < before && event.type === 'review.files_rejected') for (const path of event.data.rejected) files.add(path);
  }
  return [...files].sort();
}

/** One editor tab per task's pull request, revealed again (and brought up to date) when reopened. */
export class PullRequestViews implements vscode.Disposable {
  private readonly panels = new Map<string, vscode.WebviewPanel>();

  show(taskId: string, shown: PullRequestPage, options: { reveal?: boolean } = {}): void {
    let panel = this.panels.get(taskId);
    if (panel) {
      panel.title = shown.title;
      if (options.reveal !== false) panel.reveal(vscode.ViewColumn.Active);
    } else {
      panel = vscode.window.createWebviewPanel('dockhand.pullRequest', shown.title, vscode.ViewColumn.Active, { enableScripts: false, enableFindWidget: true });
      this.panels.set(taskId, panel);
      panel.onDidDispose(() => this.panels.delete(taskId));
    }
    panel.webview.html = shown.html;
  }

  dispose(): void {
    for (const panel of this.panels.values()) panel.dispose();
    this.panels.clear();
  }
}

/** Opens a task's pull request: in the browser when it has a web address, in VS Code otherwise. */
export async function openPullRequest(state: DockhandState, views: PullRequestViews, taskId: string, url: string, forge?: (repo: string, number: number) => Promise<PullRequestView>): Promise<void> {
  if (/^https?:\/\//.test(url)) {
    await vscode.env.openExternal(vscode.Uri.parse(url));
    return;
  }
  const title = state.task(taskId)?.ticket.title ?? state.trajectory(taskId).summary.title ?? taskId;
  const shown = renderPullRequest(title, state.sessions.events(taskId)) ?? {
    title: `PR: ${title}`,
    html: page(title, `<h1>${escapeHtml(title)}</h1><p>The pull request is ${escapeHtml(url)}.</p>`),
  };
  views.show(taskId, shown);
  // Then the forge's conversation and checks, redrawn in place once the server answers (the
  // page above shows at once; a failed fetch leaves it as it is).
  const task = state.task(taskId);
  const events = state.sessions.events(taskId);
  const opened = events.findLast((event) => event.type === 'pr.opened');
  if (!forge || !task || opened?.type !== 'pr.opened') return;
  const view = await forge(task.context.repo, opened.data.number).catch(() => undefined);
  const withForge = view ? renderPullRequest(title, state.sessions.events(taskId), view) : undefined;
  if (withForge) views.show(taskId, withForge, { reveal: false });
}
