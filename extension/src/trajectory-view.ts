import type { TaskApprovalsResponse, TaskEvent } from '@dockhand/protocol';
import { FromWebview, clipEventOutput, type ClippedOutput, type PendingComment, type ReviewFile, type ToWebview } from '@dockhand/webview-ui/messages';
import * as vscode from 'vscode';
import type { TaskActions } from './actions';
import type { DockhandState } from './dockhand-state';
import { describeError } from './errors';

/*
 * The side panel (a webview view in its own activity bar container). The extension keeps the
 * WebSocket and the event log; the webview renders and posts decisions. Nothing is posted before
 * the webview says `ready` (messages sent earlier are lost), and on every `ready` — first load,
 * reload, a re-created view — the whole log of the selected task is sent again.
 */

export const TRAJECTORY_VIEW_ID = 'dockhand.trajectory';

export class TrajectoryViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  private readonly disposables: vscode.Disposable[] = [];
  private viewDisposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly state: DockhandState,
    private readonly actions: TaskActions,
    private readonly commands: {
      sendTicket(): void;
      openDiff(taskId: string, path: string, line?: number): void;
      review(taskId: string, action: 'approve' | 'request_changes' | 'reject', comment?: string): Promise<boolean>;
      /** The task's approvals as the server shows them to this user (`canDecide`, `deciders`, `canReview`). */
      taskApprovals(taskId: string): Promise<TaskApprovalsResponse>;
      /** Cancels the task after asking; false when refused or not confirmed. */
      cancel(taskId: string): Promise<boolean>;
      /** Line comments written in the diff editor and not yet sent. */
      pendingComments(taskId: string): PendingComment[];
      onDidChangeComments: vscode.Event<string>;
      /**
       * Accept per file: the diff under review's files with the decisions (undefined until the
       * diff is read), and changing one.
       */
      reviewFiles(taskId: string): ReviewFile[] | undefined;
      setFileAccepted(taskId: string, path: string, accepted: boolean): void;
      onDidChangeFileDecisions: vscode.Event<string>;
      /** The native multi-file diff editor: this round's changes or all of them. */
      openChanges(taskId: string, scope: 'round' | 'all'): void;
      /** A fix the panel offers: sign in, show the output channel. */
      run(command: 'signIn' | 'showOutput'): void;
    },
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.disposables.push(
      state.onDidChangeTasks(() => this.postTasks()),
      state.onDidChangeSelection(() => {
        this.postTasks();
        this.postAllEvents();
      }),
      state.onDidReceiveEvents(({ taskId, events }) => {
        if (taskId !== state.selectedTaskId) return;
        this.postEvents(taskId, events, false);
        if (events.some((event) => event.type === 'approval.requested')) void this.postApprovals(taskId);
      }),
      state.onDidChangeStatus(({ taskId, status, detail }) => {
        if (taskId === state.selectedTaskId) this.post({ type: 'connection', taskId, status, detail });
      }),
      commands.onDidChangeComments((taskId) => {
        if (taskId === state.selectedTaskId) this.postComments(taskId);
      }),
      commands.onDidChangeFileDecisions((taskId) => {
        if (taskId === state.selectedTaskId) this.postFileDecisions(taskId);
      }),
    );
  }

  /** The view, once VS Code has created it (for its badge). */
  get webviewView(): vscode.WebviewView | undefined {
    return this.view;
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    for (const disposable of this.viewDisposables) disposable.dispose();
    this.view = view;
    this.ready = false;
    const assets = vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview');
    view.webview.options = { enableScripts: true, localResourceRoots: [assets] };
    view.webview.html = webviewHtml(view.webview, assets);
    this.viewDisposables = [
      view.webview.onDidReceiveMessage((message: unknown) => this.receive(message)),
      view.onDidDispose(() => {
        this.view = undefined;
        this.ready = false;
      }),
    ];
  }

  reveal(): void {
    this.view?.show(true);
  }

  dispose(): void {
    for (const disposable of [...this.disposables, ...this.viewDisposables]) disposable.dispose();
  }

  private post(message: ToWebview): void {
    if (!this.view || !this.ready) return;
    void this.view.webview.postMessage(message);
  }

  private postTasks(): void {
    this.post({ type: 'tasks', tasks: this.state.tasks, selectedTaskId: this.state.selectedTaskId ?? null });
  }

  private postAllEvents(): void {
    const taskId = this.state.selectedTaskId;
    if (!taskId) return;
    this.postEvents(taskId, this.state.sessions.events(taskId), true);
    this.postComments(taskId);
    this.postFileDecisions(taskId);
    void this.postApprovals(taskId);
    const status = this.state.sessions.status(taskId);
    if (status) this.post({ type: 'connection', taskId, status: status.status, detail: status.detail });
  }

  private postComments(taskId: string): void {
    this.post({ type: 'pendingComments', taskId, comments: this.commands.pendingComments(taskId) });
  }

  private postFileDecisions(taskId: string): void {
    const files = this.commands.reviewFiles(taskId);
    // Until the diff is read the panel lists no file rather than a guess from the events.
    if (files) this.post({ type: 'fileDecisions', taskId, files });
  }

  private postEvents(taskId: string, events: readonly TaskEvent[], reset: boolean): void {
    const sent: TaskEvent[] = [];
    const clipped: ClippedOutput[] = [];
    for (const original of events) {
      const result = clipEventOutput(original);
      sent.push(result.event);
      if (result.clipped) clipped.push(result.clipped);
    }
    this.post({ type: 'events', taskId, reset, events: sent, clipped });
  }

  /**
   * Who may decide the task's pending approvals, asked of the server whenever one is requested
   * (the panel shows Approve/Deny only to someone who may). A failure is logged; the panel then
   * keeps an override's card without buttons and a command's with them, as before it knew.
   */
  private async postApprovals(taskId: string): Promise<void> {
    if (this.state.trajectory(taskId).summary.pendingApprovals.length === 0) return;
    try {
      const { approvals, canReview } = await this.commands.taskApprovals(taskId);
      const pending = approvals.filter((approval) => approval.state === 'pending');
      this.post({ type: 'approvals', taskId, canReview, approvals: pending.map(({ id, canDecide, deciders }) => ({ approvalId: id, canDecide, deciders })) });
    } catch (error) {
      this.log.warn(`Reading the approvals of ${taskId} failed: ${describeError(error)}`);
    }
  }

  private receive(raw: unknown): void {
    const parsed = FromWebview.safeParse(raw);
    if (!parsed.success) {
      this.log.warn(`Ignored a malformed message from the side panel: ${parsed.error.issues[0]?.message ?? ''}`);
      return;
    }
    const message = parsed.data;
    switch (message.type) {
      case 'ready':
        this.ready = true;
        this.postTasks();
        this.postAllEvents();
        return;
      case 'selectTask':
        this.state.select(message.taskId);
        return;
      case 'interrupt':
        void this.commands.cancel(message.taskId).then((ok) => {
          if (!ok) this.post({ type: 'notice', level: 'info', text: 'The task goes on.' });
        });
        return;
      case 'pause':
        void this.report(this.actions.pause(message.taskId));
        return;
      case 'resume':
        void this.report(this.actions.resume(message.taskId, message.text));
        return;
      case 'sendMessage':
        void this.report(this.actions.sendMessage(message.taskId, message.text));
        return;
      case 'decideApproval':
        void this.report(this.actions.decideApproval(message.taskId, message.approvalId, message.decision, message.comment));
        return;
      case 'review':
        void this.report(this.commands.review(message.taskId, message.action, message.comment));
        return;
      case 'openDiff':
        if (message.line) this.commands.openDiff(message.taskId, message.path, message.line);
        else this.commands.openDiff(message.taskId, message.path);
        return;
      case 'setFileAccepted':
        this.commands.setFileAccepted(message.taskId, message.path, message.accepted);
        return;
      case 'openChanges':
        this.commands.openChanges(message.taskId, message.scope);
        return;
      case 'openExternal':
        // A local-forge PR (dockhand-local://) has no web page: the PR view shows it in VS Code.
        if (/^https?:\/\//.test(message.url) || !this.state.selectedTaskId) void vscode.env.openExternal(vscode.Uri.parse(message.url));
        else void vscode.commands.executeCommand('dockhand.openPullRequest', this.state.selectedTaskId);
        return;
      case 'loadOutput': {
        const event = this.state.sessions.event(message.taskId, message.seq);
        if (event && (event.type === 'tool.finished' || event.type === 'tests.finished')) {
          this.post({ type: 'output', taskId: message.taskId, seq: message.seq, text: event.data.output });
        }
        return;
      }
      case 'sendTicket':
        this.commands.sendTicket();
        return;
      case 'command':
        this.commands.run(message.command);
        return;
    }
  }

  /** A refused action re-enables the panel's buttons and says why. */
  private async report(result: Promise<boolean>): Promise<void> {
    if (!(await result)) this.post({ type: 'notice', level: 'error', text: 'The server refused the last action; see the notification for why.' });
  }
}

export function webviewHtml(webview: vscode.Webview, assets: vscode.Uri): string {
  const nonce = createNonce();
  const script = webview.asWebviewUri(vscode.Uri.joinPath(assets, 'webview.js'));
  const style = webview.asWebviewUri(vscode.Uri.joinPath(assets, 'webview.css'));
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `img-src ${webview.cspSource} data:`,
    `font-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style.toString()}">
<title>Dockhand</title>
</head>
<body>
<script nonce="${nonce}" src="${script.toString()}"></script>
</body>
</html>`;
}

function createNonce(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = new Uint8Array(32);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (byte) => alphabet[byte % alphabet.length]).join('');
}
