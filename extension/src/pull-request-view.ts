import type { TaskEvent } from '@dockhand/protocol';
import * as vscode from 'vscode';
import type { DockhandState } from './dockhand-state';

/*
 * "Open pull request": a GitHub PR opens in the browser; a PR on the server's local forge
 * (`dockhand-local://…`, which no browser opens) is shown inside VS Code as a Markdown preview:
 * its description, head commit, checks (tests, policy, self-review) and changed files, with the
 * Changes view beside it for the diffs.
 */

export const PULL_REQUEST_SCHEME = 'dockhand-pr';

export function renderPullRequest(title: string, events: readonly TaskEvent[]): string | undefined {
  const opened = events.findLast((event) => event.type === 'pr.opened');
  if (opened?.type !== 'pr.opened') return undefined;
  const lines = [`# #${opened.data.number} ${title}`, '', `\`${opened.data.branch}\` at \`${opened.data.headSha.slice(0, 12)}\` · ${opened.data.url}`, ''];
  const review = events.findLast((event) => event.type === 'review.finished');
  if (review?.type === 'review.finished' && review.data.summary) lines.push('## Description', '', review.data.summary, '');
  lines.push('## Checks', '');
  const tests = events.findLast((event) => event.type === 'tests.finished');
  if (tests?.type === 'tests.finished') {
    const pre = tests.data.preExisting?.length ? ` (${tests.data.preExisting.length} already failing at the base)` : '';
    lines.push(`- ${tests.data.ok ? '✓' : '✗'} Tests: ${tests.data.passed} passed, ${tests.data.failed} failed${pre} — \`${tests.data.command}\``);
  }
  const policy = events.findLast((event) => event.type === 'policy.checked');
  if (policy?.type === 'policy.checked') {
    lines.push(`- ${policy.data.ok ? '✓ Policy checks passed' : policy.data.overridden ? `⚠ Policy overridden by ${policy.data.overriddenBy ?? 'a repo owner'}` : '✗ Policy checks failed'}`);
  }
  if (review?.type === 'review.finished') lines.push(`- ${review.data.approved ? '✓ Self-review approved' : '⚠ Self-review found problems'}`);
  const files = new Map<string, string>();
  for (const event of events) if (event.type === 'file.changed') files.set(event.data.path, event.data.change);
  // Files the approval left out are not in the PR (the server pushed the rest).
  const leftOut = leftOutOfPush(events, opened.seq);
  for (const path of leftOut) files.delete(path);
  lines.push('', `## Changed files (${files.size})`, '', ...[...files].sort(([a], [b]) => a.localeCompare(b)).map(([path, change]) => `- \`${path}\` (${change})`), '');
  if (leftOut.length) lines.push('## Left out in review', '', 'Not in this pull request; the tests ran with them in:', '', ...leftOut.map((path) => `- \`${path}\``), '');
  lines.push('Open a file\'s diff from the Dockhand **Changes** view.', '');
  return lines.join('\n');
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

export class PullRequestDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly documents = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  set(taskId: string, markdown: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: PULL_REQUEST_SCHEME, path: `/pull request ${taskId.replace(/[^A-Za-z0-9_-]/g, '_')}.md` });
    this.documents.set(uri.path, markdown);
    this.changed.fire(uri);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.documents.get(uri.path) ?? '# No pull request yet';
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/** Opens a task's pull request: in the browser when it has a web address, in VS Code otherwise. */
export async function openPullRequest(state: DockhandState, documents: PullRequestDocuments, taskId: string, url: string): Promise<void> {
  if (/^https?:\/\//.test(url)) {
    await vscode.env.openExternal(vscode.Uri.parse(url));
    return;
  }
  const title = state.task(taskId)?.ticket.title ?? state.trajectory(taskId).summary.title ?? taskId;
  const markdown = renderPullRequest(title, state.sessions.events(taskId)) ?? `# ${title}\n\nThe pull request is ${url}.`;
  const uri = documents.set(taskId, markdown);
  try {
    await vscode.commands.executeCommand('markdown.showPreview', uri);
  } catch {
    await vscode.window.showTextDocument(uri, { preview: true });
  }
}
