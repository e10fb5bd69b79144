import * as vscode from 'vscode';
import { TaskActions } from './actions';
import { ApiClient } from './api-client';
import { showApprovalInbox } from './approvals-inbox';
import { TokenStore } from './auth';
import { AGENT_SCHEME, BASE_SCHEME, ChangeContentProvider, ChangesTreeProvider, openChangeDiff } from './changes';
import { DockhandState } from './dockhand-state';
import { describeError } from './errors';
import { applyDiffOnNewBranch, readGitState } from './git-context';
import { ReviewComments } from './review-comments';
import { sendTicket } from './send-ticket';
import { affectsServerUrl, readSettings, setServerUrl } from './settings';
import { TaskStatusBar } from './status-bar';
import { TaskSessions } from './task-sessions';
import { TRAJECTORY_VIEW_ID, TrajectoryViewProvider } from './trajectory-view';
import { connectWebSocket } from './ws-socket';

/*
 * Wires the pieces together. Every disposable is pushed to `context.subscriptions` exactly once,
 * here, so deactivation closes sockets, views and emitters in one place.
 */

export function activate(context: vscode.ExtensionContext): void {
  const register = <T extends vscode.Disposable>(disposable: T): T => {
    context.subscriptions.push(disposable);
    return disposable;
  };
  const log = register(vscode.window.createOutputChannel('Dockhand', { log: true }));
  const tokens = register(new TokenStore(context.secrets));
  register(tokens.watch());

  let client = createClient(tokens);
  const api = (): ApiClient => client;
  const sessions = new TaskSessions({
    eventsUrl: (taskId, after) => api().eventsUrl(taskId, after),
    headers: () => api().authHeaders(),
    connect: connectWebSocket,
  });
  register({ dispose: () => sessions.dispose() });
  const state = register(new DockhandState(api, sessions, context.workspaceState));
  const actions = new TaskActions(api, log);
  const comments = register(new ReviewComments());
  const content = register(new ChangeContentProvider(api));
  register(vscode.workspace.registerTextDocumentContentProvider(BASE_SCHEME, content));
  register(vscode.workspace.registerTextDocumentContentProvider(AGENT_SCHEME, content));
  const changes = register(new ChangesTreeProvider(state, content));
  register(vscode.window.createTreeView('dockhand.changes', { treeDataProvider: changes, showCollapseAll: false }));
  register(new TaskStatusBar(state));

  const openDiff = (taskId: string, path: string): void => {
    openChangeDiff(taskId, path).then(undefined, (error: unknown) => {
      log.error(`Opening the diff of ${path} failed: ${describeError(error)}`);
      void vscode.window.showErrorMessage(`Dockhand: cannot open the diff of ${path}: ${describeError(error)}`);
    });
  };
  const panel = register(
    new TrajectoryViewProvider(
      context.extensionUri,
      state,
      actions,
      {
        sendTicket: () => void vscode.commands.executeCommand('dockhand.sendTicket'),
        openDiff,
        review: (taskId, action, comment) => reviewTask(taskId, action, comment),
        taskApprovals: (taskId) => api().listTaskApprovals(taskId),
      },
      log,
    ),
  );
  register(vscode.window.registerWebviewViewProvider(TRAJECTORY_VIEW_ID, panel, { webviewOptions: { retainContextWhenHidden: true } }));
  /** Every review decision goes through here: line comments are added, the PR link announced. */
  const reviewTask = async (taskId: string, action: 'approve' | 'request_changes' | 'reject', comment?: string): Promise<boolean> => {
    const all = action === 'request_changes' ? [...comments.pending(taskId), ...(comment ? [{ body: comment }] : [])] : comment ? [{ body: comment }] : [];
    const ok = await actions.review(taskId, action, all);
    if (ok && action === 'request_changes') comments.clear(taskId);
    if (ok && action === 'approve') announcePullRequest(state, taskId);
    return ok;
  };
  const revealPanel = (): void => {
    void vscode.commands.executeCommand(`${TRAJECTORY_VIEW_ID}.focus`);
  };

  const refresh = async (quiet: boolean): Promise<void> => {
    try {
      await state.refreshTasks();
    } catch (error) {
      log.warn(`Listing tasks failed: ${describeError(error)}`);
      if (!quiet) void vscode.window.showErrorMessage(`Dockhand: ${describeError(error)}`);
    }
  };

  /** The selected task, or one the developer picks; undefined if none or cancelled. */
  const targetTask = async (arg: unknown): Promise<string | undefined> => {
    if (typeof arg === 'string' && arg) return arg;
    if (state.selectedTaskId) return state.selectedTaskId;
    return pickTask(state);
  };

  const command = (id: string, run: (...args: unknown[]) => unknown): void => {
    register(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        try {
          return await run(...args);
        } catch (error) {
          log.error(`${id} failed: ${describeError(error)}`);
          void vscode.window.showErrorMessage(`Dockhand: ${describeError(error)}`);
          return undefined;
        }
      }),
    );
  };

  command('dockhand.sendTicket', (arg) => sendTicket({ api, state, log, revealPanel, signedIn: async () => Boolean(await tokens.get()) }, arg instanceof vscode.Uri));
  command('dockhand.signIn', async () => {
    const token = await vscode.window.showInputBox({
      title: 'Dockhand: Sign in',
      prompt: `Paste your Dockhand API token for ${readSettings().serverUrl} (stored in the OS keychain)`,
      password: true,
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() ? undefined : 'Paste a token'),
    });
    if (!token) return;
    await tokens.set(token.trim());
    log.info('Signed in');
    sessions.reconnectAll();
    await refresh(false);
    void vscode.window.showInformationMessage('Dockhand: signed in.');
  });
  command('dockhand.signOut', async () => {
    await tokens.clear();
    log.info('Signed out');
    void vscode.window.showInformationMessage('Dockhand: signed out; the token was removed from the keychain.');
  });
  command('dockhand.setServerUrl', async () => {
    const url = await vscode.window.showInputBox({
      title: 'Dockhand: Set server URL',
      value: readSettings().serverUrl,
      ignoreFocusOut: true,
      validateInput: (value) => (/^https?:\/\/[^\s/]+/.test(value.trim()) ? undefined : 'Enter an http:// or https:// URL'),
    });
    if (url) await setServerUrl(url.trim());
  });
  command('dockhand.showTasks', async () => {
    await refresh(false);
    const taskId = await pickTask(state);
    if (!taskId) return;
    state.select(taskId);
    revealPanel();
  });
  command('dockhand.showApprovals', () => showApprovalInbox({ api, state, revealPanel }));
  command('dockhand.refreshTasks', () => refresh(false));
  command('dockhand.interrupt', async (arg) => {
    const taskId = await targetTask(arg);
    if (taskId) await actions.interrupt(taskId);
  });
  command('dockhand.sendMessage', async (arg) => {
    const taskId = await targetTask(arg);
    if (!taskId) return;
    const text = await vscode.window.showInputBox({ title: 'Dockhand: Send message to agent', prompt: 'The agent reads it before its next turn', ignoreFocusOut: true });
    if (text?.trim()) await actions.sendMessage(taskId, text.trim());
  });
  command('dockhand.approve', async (arg) => {
    const taskId = await targetTask(arg);
    if (!taskId) return;
    await reviewTask(taskId, 'approve');
  });
  command('dockhand.requestChanges', async (arg) => {
    const taskId = await targetTask(arg);
    if (!taskId) return;
    let extra: string | undefined;
    if (comments.pending(taskId).length === 0) {
      extra = await vscode.window.showInputBox({ title: 'Dockhand: Request changes', prompt: 'What should the agent change?', ignoreFocusOut: true });
      if (!extra?.trim()) return;
    }
    await reviewTask(taskId, 'request_changes', extra?.trim());
  });
  command('dockhand.reject', async (arg) => {
    const taskId = await targetTask(arg);
    if (!taskId) return;
    const sure = await vscode.window.showWarningMessage('Reject the agent\'s change? Nothing will be pushed.', { modal: true }, 'Reject');
    if (sure === 'Reject') await reviewTask(taskId, 'reject');
  });
  command('dockhand.openPullRequest', async (arg) => {
    const taskId = await targetTask(arg);
    if (!taskId) return;
    const url = state.trajectory(taskId).summary.prUrl ?? state.task(taskId)?.prUrl;
    if (!url) {
      void vscode.window.showInformationMessage('Dockhand: this task has no pull request yet.');
      return;
    }
    await vscode.env.openExternal(vscode.Uri.parse(url));
  });
  command('dockhand.applyLocally', async (arg) => {
    const taskId = await targetTask(arg);
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!taskId || !folder) return;
    const diff = await api().getDiff(taskId);
    const branch = `dockhand/${taskId.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 40)}`;
    const root = (await readGitState(folder.uri.fsPath)).root;
    await applyDiffOnNewBranch(root, { branch, baseSha: diff.baseSha, diff: diff.diff });
    log.info(`Applied ${diff.files.length} changed file(s) of ${taskId} on ${branch}`);
    void vscode.window.showInformationMessage(`Dockhand: the agent's changes are on the new branch ${branch} (staged, not committed).`);
  });
  command('dockhand.openChange', (taskId, path) => {
    if (typeof taskId === 'string' && typeof path === 'string') openDiff(taskId, path);
  });
  command('dockhand.addReviewComment', (reply) => {
    if (isCommentReply(reply)) comments.addComment(reply);
  });

  register(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!affectsServerUrl(event)) return;
      client = createClient(tokens);
      log.info(`Server URL is now ${client.baseUrl}`);
      sessions.reconnectAll();
      void refresh(true);
    }),
  );
  register(tokens.onDidChange(() => void refresh(true)));
  log.info(`Dockhand activated; server ${client.baseUrl}`);
  void tokens.get().then((token) => (token ? refresh(true) : undefined));
}

export function deactivate(): void {
  // Everything is disposed through context.subscriptions.
}

function isCommentReply(value: unknown): value is vscode.CommentReply {
  return typeof value === 'object' && value !== null && 'thread' in value && typeof Reflect.get(value, 'text') === 'string';
}

function createClient(tokens: TokenStore): ApiClient {
  return new ApiClient({ baseUrl: readSettings().serverUrl, token: () => tokens.get() });
}

async function pickTask(state: DockhandState): Promise<string | undefined> {
  const tasks = state.tasks;
  if (tasks.length === 0) {
    void vscode.window.showInformationMessage('Dockhand: no tasks yet. Run "Dockhand: Send ticket to agent".');
    return undefined;
  }
  const picked = await vscode.window.showQuickPick(
    tasks.map((task) => ({
      label: task.ticket.title,
      description: `${task.state.replace(/_/g, ' ')} · $${task.usage.costUsd.toFixed(2)}`,
      detail: `${task.id} · ${task.createdAt}`,
      taskId: task.id,
    })),
    { title: 'Dockhand: tasks', placeHolder: 'Pick a task to follow' },
  );
  return picked?.taskId;
}

/** After "Approve and push": tell the developer the PR link as soon as `pr.opened` arrives. */
function announcePullRequest(state: DockhandState, taskId: string): void {
  const existing = state.trajectory(taskId).summary.prUrl;
  const show = (url: string): void => {
    void vscode.window.showInformationMessage(`Dockhand opened a pull request: ${url}`, 'Open pull request').then((choice) => {
      if (choice) void vscode.env.openExternal(vscode.Uri.parse(url));
    });
  };
  if (existing) return show(existing);
  const subscription = state.onDidReceiveEvents(({ taskId: id, events }) => {
    if (id !== taskId) return;
    for (const event of events) {
      if (event.type === 'pr.opened') {
        subscription.dispose();
        show(event.data.url);
        return;
      }
    }
  });
}
