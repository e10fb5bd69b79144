import type { ReadinessCheckStatus, ReadinessReport } from '@dockhand/protocol';
import * as vscode from 'vscode';
import type { ApiClient } from './api-client';
import { showError } from './notify';

/*
 * "Dockhand: Check repository readiness": asks the server to check a registered repository
 * (`POST /v1/repos/:name/check` starts it: environment, snapshot, install, tests, test selection;
 * `GET` the same path until it is done, its stages shown as progress) and shows the report as a
 * Markdown preview, blocking problems first, each with what to do.
 */

export const READINESS_SCHEME = 'dockhand-readiness';

export function renderReadiness(report: ReadinessReport): string {
  const mark = (ok: boolean): string => (ok ? '✓' : '✗');
  const seconds = (value?: number): string => (value === undefined ? '' : ` (${value.toFixed(1)} s)`);
  const lines: string[] = [
    `# ${report.ready ? '✓' : '✗'} ${report.repo}: ${report.ready ? 'ready for Dockhand' : 'not ready yet'}`,
    '',
    `Checked at commit \`${report.sha.slice(0, 12)}\`${report.head ? `, the head of \`${report.head.branch}\` at ${report.head.source} when the check began` : ''}.`,
    '',
  ];
  if (report.blocking.length) {
    lines.push('## What blocks a rollout', '');
    for (const block of report.blocking) lines.push(`- **${block.problem}** — ${block.action}`);
    lines.push('');
  }
  lines.push('## Checks', '', '| | check | result |', '|---|---|---|');
  const row = (ok: boolean, name: string, detail: string, action?: string): void => {
    const cell = `${detail}${!ok && action ? ` — *${action}*` : ''}`.replace(/\|/g, '\\|').replace(/\n/g, ' ');
    lines.push(`| ${mark(ok)} | ${name} | ${cell} |`);
  };
  row(report.install.ok, 'Install', `${report.install.detail}${seconds(report.install.seconds)}`, report.install.action);
  const tests = report.tests;
  row(tests.ok, 'Tests', `${tests.detail}: ${tests.passed} passed, ${tests.failed} failed${tests.command ? ` (\`${tests.command}\`)` : ''}${seconds(tests.seconds)}`, tests.action);
  row(report.selection.ok, 'Test selection', `${report.selection.detail}${report.selection.testFiles !== undefined ? ` (${report.selection.testFiles} test files, ${report.selection.sourceFiles ?? 0} source files)` : ''}`, report.selection.action);
  if (report.snapshot) {
    const snapshot = report.snapshot;
    row(snapshot.built, 'Snapshot', `\`${snapshot.image}\`${snapshot.buildSeconds !== undefined ? `, built in ${snapshot.buildSeconds.toFixed(0)} s` : ''}${snapshot.startSeconds !== undefined ? `, starts in ${snapshot.startSeconds.toFixed(1)} s` : ''}`);
  }
  lines.push('');
  if (tests.preExistingFailures.length) {
    lines.push('## Already failing at this commit', '', 'Reported as pre-existing on every task, never the agent\'s to fix:', '');
    for (const name of tests.preExistingFailures) lines.push(`- \`${name}\``);
    lines.push('');
  }
  if (tests.flaky.length) {
    lines.push('## Flaky', '');
    for (const name of tests.flaky) lines.push(`- \`${name}\``);
    lines.push('');
  }
  if (report.environment) {
    const env = report.environment;
    lines.push('## Environment', '', '| | value | from |', '|---|---|---|');
    if (env.node) lines.push(`| Node.js | ${env.node.version} | ${env.node.source} |`);
    if (env.packageManager) lines.push(`| Package manager | ${env.packageManager.name} ${env.packageManager.version} | ${env.packageManager.source} |`);
    if (env.python) lines.push(`| Python | ${env.python.version ?? 'any'} | ${env.python.source} |`);
    lines.push(`| Install | \`${env.install.command}\` | ${env.install.source} |`, `| Test | \`${env.test.command}\` | ${env.test.source} |`, '');
    lines.push('Override any of these in `.dockhand/environment.yml`.', '');
  }
  return lines.join('\n');
}

/** Holds the last report per repository for the preview. */
export class ReadinessDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly reports = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  set(repo: string, markdown: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: READINESS_SCHEME, path: `/${repo.replace(/\//g, '_')} readiness.md` });
    this.reports.set(uri.path, markdown);
    this.changed.fire(uri);
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.reports.get(uri.path) ?? '# No report yet\n\nRun "Dockhand: Check repository readiness".';
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/** Starts the check and polls it until it is done; a failed check throws its error. */
export async function waitForReport(api: ApiClient, repo: string, pollMs: number, onStatus: (status: ReadinessCheckStatus) => void, cancelled?: vscode.CancellationToken): Promise<ReadinessReport> {
  let status = await api.startReadinessCheck(repo);
  for (;;) {
    onStatus(status);
    if (status.state === 'done' && status.report) return status.report;
    if (status.state !== 'running') throw new Error(`the check of ${repo} failed: ${status.error?.message ?? 'no report'}`);
    if (cancelled?.isCancellationRequested) throw new Error(`stopped waiting for the check of ${repo}; it goes on on the server`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
    status = await api.readinessCheck(repo);
  }
}

export async function checkReadiness(deps: { api(): ApiClient; documents: ReadinessDocuments; log: vscode.LogOutputChannel; suggestedRepo?: string; pollMs?: number }): Promise<void> {
  const repo = await vscode.window.showInputBox({
    title: 'Dockhand: Check repository readiness',
    prompt: 'Name of the registered repository (as in "dockhand repo add")',
    value: deps.suggestedRepo ?? '',
    ignoreFocusOut: true,
    validateInput: (value) => (/^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)?$/.test(value.trim()) ? undefined : 'A repository name such as "shop" or "acme/shop"'),
  });
  if (!repo) return;
  const name = repo.trim();
  let report: ReadinessReport;
  try {
    report = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Dockhand: checking ${name}`, cancellable: true },
      (progress, cancelled) => waitForReport(deps.api(), name, deps.pollMs ?? 2_000, (status) => {
        const last = status.progress.at(-1);
        progress.report({ message: last ? `${last.stage}, ${Math.round(last.elapsedMs / 1000)} s${last.line ? `: ${last.line.slice(0, 80)}` : ''}` : 'starting…' });
      }, cancelled),
    );
  } catch (error) {
    showError(deps.log, `checking ${name} failed`, error);
    return;
  }
  deps.log.info(`Readiness of ${report.repo} at ${report.sha}: ${report.ready ? 'ready' : `not ready (${report.blocking.map((b) => b.problem).join('; ')})`}`);
  const uri = deps.documents.set(report.repo, renderReadiness(report));
  try {
    await vscode.commands.executeCommand('markdown.showPreview', uri);
  } catch {
    await vscode.window.showTextDocument(uri, { preview: true });
  }
}
