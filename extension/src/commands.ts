import * as vscode from 'vscode';
import type { TaskActions } from './actions';
import type { ApiClient } from './api-client';
import { showApprovalInbox } from './approvals-inbox';
import type { TokenStore } from './auth';
import type { Connection } from './connection';
import type { DockhandState } from './dockhand-state';
import { applyDiffOnNewBranch, readGitState } from './git-context';
import { showError } from './notify';
import { openPullRequest, type PullRequestViews } from './pull-request-view';
import { checkReadiness, type ReadinessDocuments } from './readiness';
import type { ReviewComments } from './review-comments';
import { sendTicket } from './send-ticket';
import { readSettings, setServerUrl } from './settings';
import { signIn } from './sign-in';
import { shortId, taskNumbers } from '@dockhand/webview-ui/task-identity';

/*
 * The palette commands (package.json `contributes.commands`; their `when` clauses keep each to
 * the states where it applies). Every command's failure is shown once with the action that fixes
 * it and logged in full.
 */

export interface CommandDeps {
  api(): ApiClient;
  tokens: TokenStore;
  connection: Connection;
  state: DockhandState;
  actions: TaskActions;
  comments: ReviewComments;
  readiness: ReadinessDocuments;
  pullRequests: PullRequestViews;
  log: vscode.LogOutputChannel;
  register(disposable: vscode.Disposable): void;
  revealPanel(): void;
  refresh(quiet: boolean): Promise<void>;
  openDiff(taskId: string, path: string, line?: number): void;
  /** The multi-file diff editor on this round's changes or all of them. */
  openChanges(taskId: string, scope: 'round' | 'all'): void;
  review(taskId: string, action: 'approve' | 'request_changes' | 'reject', comment?: string): Promise<boolean>;
  /** Reconnects the event streams (after signing in again). */
  reconnect(): void;
}

export function registerCommands(deps: CommandDeps): void {
  const { state, log } = deps;
  const command = (id: string, run: (...args: unknown[]) => unknown): void => {
    deps.register(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        try {
          return await run(...args);
        } catch (error) {
          showError(log, `${id.replace('dockhand.', '')} failed`, error);
          return undefined;
        }
      }),
    );
  };

  /** The selected task, or one the developer picks; undefined if none or cancelled. */
  const targetTask = async (arg: unknown): Promise<string | undefined> => {
    if (typeof arg === 'string' && arg) return arg;
    if (state.selectedTaskId) return state.selectedTaskId;
    return pickTask(state);
  };

  command('dockhand.sendTicket', (arg) =>
    sendTicket({ api: deps.api, state, log, revealPanel: deps.revealPanel, signedIn: async () => deps.connection.state.phase === 'signed_in' || Boolean(await deps.tokens.get()) }, arg instanceof vscode.Uri),
  );
  command('dockhand.signIn', async () => {
    if (!(await signIn(deps))) return;
    deps.reconnect();
    await deps.refresh(false);
  });
  command('dockhand.signOut', async () => {
    await deps.tokens.clear();
    deps.connection.signedOut('You signed out; the token was removed from the keychain.');
    log.info('Signed out');
    void vscode.window.showInformationMessage('Dockhand: signed out; the token was removed from the keychain.');
  });
  command('dockhand.setServerUrl', async () => {
    const url = await vscode.window.showInputBox({
      title: 'Dockhand: Set server URL',
      prompt: 'The URL "npm start" or "dockhand serve" printed (default http://127.0.0.1:8737)',
      value: readSettings().serverUrl,
      ignoreFocusOut: true,
      validateInput: (value) => (/^https?:\/\/[^\s/]+/.test(value.trim()) ? undefined : 'Enter an http:// or https:// URL'),
    });
    if (!url) return;
    await setServerUrl(url.trim());
    // Said at once, whatever the answer: nothing listening, something that is not Dockhand, or
    // a Dockhand server and its version (the configuration listener also re-checks).
    const result = await deps.connection.check();
    if (result.phase === 'no_server') {
      const choice = await vscode.window.showErrorMessage(`Dockhand: ${result.detail ?? `no Dockhand server at ${url.trim()}`}`, 'Set server URL', 'Retry');
      if (choice === 'Set server URL') void vscode.commands.executeCommand('dockhand.setServerUrl');
      if (choice === 'Retry') void vscode.commands.executeCommand('dockhand.checkConnection');
    } else if (result.phase !== 'checking') {
      void vscode.window.showInformationMessage(`Dockhand: connected to Dockhand ${result.version ?? ''} at ${url.trim()}${result.phase === 'signed_in' ? ` as ${result.user ?? ''}` : '; sign in next'}.`.replace('  ', ' '));
    }
  });
  command('dockhand.checkConnection', async () => {
    const result = await deps.connection.check();
    if (result.phase === 'signed_in') await deps.refresh(true);
  });
  command('dockhand.showOutput', () => log.show(true));
  command('dockhand.openWalkthrough', () => vscode.commands.executeCommand('workbench.action.openWalkthrough', 'dockhand.dockhand#gettingStarted', false));
  command('dockhand.showTasks', async () => {
    await deps.refresh(false);
    const taskId = await pickTask(state);
    if (!taskId) return;
    state.select(taskId);
    deps.revealPanel();
  });
  command('dockhand.showApprovals', () => showApprovalInbox({ api: deps.api, state, revealPanel: deps.revealPanel }));
  command('dockhand.refreshTasks', () => deps.refresh(false));
  command('dockhand.interrupt', async (arg) => {
    const taskId = await targetTask(arg);
    if (taskId) await cancelTask(deps, taskId);
  });
  command('dockhand.pause', async (arg) => {
    const taskId = await targetTask(arg);
    if (taskId) await deps.actions.pause(taskId);
  });
  command('dockhand.resume', async (arg) => {
    const taskId = await targetTask(arg);
    if (taskId) await deps.actions.resume(taskId);
  });
  command('dockhand.sendMessage', async (arg) => {
    const taskId = await targetTask(arg);
    if (!taskId) return;
    const text = await vscode.window.showInputBox({ title: 'Dockhand: Send message to agent', prompt: 'The agent reads it before its next step', ignoreFocusOut: true });
    if (text?.trim()) await deps.actions.sendMessage(taskId, text.trim());
  });
  command('dockhand.approve', async (arg) => {
    const taskId = await targetTask(arg);
    if (taskId) await deps.review(taskId, 'approve');
  });
  command('dockhand.requestChanges', async (arg) => {
    const taskId = await targetTask(arg);
    if (!taskId) return;
    const pending = deps.comments.pending(taskId).length;
    const extra = await vscode.window.showInputBox({
      title: 'Dockhand: Request changes',
      prompt: pending ? `Sent with your ${pending} line comment${pending === 1 ? '' : 's'}; leave empty to send only those` : 'What should the agent change?',
      ignoreFocusOut: true,
      validateInput: (value) => (pending || value.trim() ? undefined : 'Write what should change, or add line comments in the diff first'),
    });
    if (extra === undefined || (!pending && !extra.trim())) return;
    await deps.review(taskId, 'request_changes', extra.trim() || undefined);
  });
  command('dockhand.reject', async (arg) => {
    const taskId = await targetTask(arg);
    if (!taskId) return;
    const sure = await vscode.window.showWarningMessage("Reject the agent's change? Nothing will be pushed and the task ends.", { modal: true }, 'Reject');
    if (sure === 'Reject') await deps.review(taskId, 'reject');
  });
  command('dockhand.openPullRequest', async (arg) => {
    const taskId = await targetTask(arg);
    if (!taskId) return;
    const url = state.trajectory(taskId).summary.prUrl ?? state.task(taskId)?.prUrl;
    if (!url) {
      void vscode.window.showInformationMessage('Dockhand: this task has no pull request yet.');
      return;
    }
    await openPullRequest(state, deps.pullRequests, taskId, url, (repo, number) => deps.api().pullRequest(repo, number));
  });
  command('dockhand.applyLocally', async (arg) => {
    const taskId = await targetTask(arg);
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!taskId || !folder) return;
    const diff = await deps.api().getDiff(taskId);
    const branch = `dockhand/${taskId.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 40)}`;
    const root = (await readGitState(folder.uri.fsPath)).root;
    await applyDiffOnNewBranch(root, { branch, baseSha: diff.baseSha, diff: diff.diff });
    log.info(`Applied ${diff.files.length} changed file(s) of ${taskId} on ${branch}`);
    void vscode.window.showInformationMessage(`Dockhand: the agent's changes are on the new branch ${branch} (staged, not committed).`);
  });
  command('dockhand.checkReadiness', () => checkReadiness({ api: deps.api, documents: deps.readiness, log, suggestedRepo: suggestRepo(state) }));
  command('dockhand.openRoundChanges', async (arg) => {
    const taskId = await targetTask(arg);
    if (taskId) deps.openChanges(taskId, 'round');
  });
  command('dockhand.openAllChanges', async (arg) => {
    const taskId = await targetTask(arg);
    if (taskId) deps.openChanges(taskId, 'all');
  });
  command('dockhand.openChange', (taskId, path) => {
    if (typeof taskId === 'string' && typeof path === 'string') deps.openDiff(taskId, path);
  });
  command('dockhand.addReviewComment', (reply) => {
    if (isCommentReply(reply)) deps.comments.addComment(reply);
  });
}

/** "Cancel" asks first: it ends the task for good (the diff so far is kept). */
export async function cancelTask(deps: Pick<CommandDeps, 'state' | 'actions'>, taskId: string): Promise<boolean> {
  const title = deps.state.task(taskId)?.ticket.title ?? deps.state.trajectory(taskId).summary.title ?? taskId;
  // The first button is the dialog's default (Enter): keeping the task, never the destructive choice.
  const sure = await vscode.window.showWarningMessage(
    `Cancel “${title}”?`,
    { modal: true, detail: 'The agent stops now and the task ends; its diff so far is kept. Send a message instead to change its course.' },
    'Keep it running',
    'Cancel task',
  );
  if (sure !== 'Cancel task') return false;
  return deps.actions.interrupt(taskId);
}

function isCommentReply(value: unknown): value is vscode.CommentReply {
  return typeof value === 'object' && value !== null && 'thread' in value && typeof Reflect.get(value, 'text') === 'string';
}

/** The selected task's repository name, as a guess for the readiness check. */
function suggestRepo(state: DockhandState): string | undefined {
  const repo = state.selectedTaskId ? state.task(state.selectedTaskId)?.context.repo : state.tasks[0]?.context.repo;
  if (!repo) return undefined;
  return /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)?$/.test(repo) ? repo : repo.replace(/\.git$/, '').split(/[/:]/).pop();
}

export async function pickTask(state: DockhandState): Promise<string | undefined> {
  const tasks = state.tasks;
  if (tasks.length === 0) {
    void vscode.window.showInformationMessage('Dockhand: no tasks yet.', 'Send ticket to agent').then((choice) => {
      if (choice) void vscode.commands.executeCommand('dockhand.sendTicket');
    });
    return undefined;
  }
  const numbers = taskNumbers(tasks);
  const picked = await vscode.window.showQuickPick(
    tasks.map((task) => ({
      label: task.ticket.title,
      description: `#${numbers.get(task.id)} · ${task.state.replace(/_/g, ' ')} · $${task.usage.costUsd.toFixed(2)}`,
      detail: `${shortId(task.id)} · sent ${new Date(task.createdAt).toLocaleString()}`,
      taskId: task.id,
    })),
    { title: 'Dockhand: tasks', placeHolder: 'Pick a task to follow', matchOnDescription: true, matchOnDetail: true },
  );
  return picked?.taskId;
}
