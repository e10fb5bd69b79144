import * as vscode from 'vscode';
import { TaskActions } from './actions';
import { ApiClient } from './api-client';
import { Attention } from './attention';
import { TokenStore } from './auth';
import { AGENT_SCHEME, BASE_SCHEME, ChangeContentProvider, ChangesTreeProvider, REVIEWED_SCHEME, openChangeDiff, openTaskChanges, taskReviewFiles, toggleFocusedFile } from './changes';
import { cancelTask, registerCommands } from './commands';
import { Connection } from './connection';
import { DockhandState } from './dockhand-state';
import { describeError, isSignedOutError } from './errors';
import { checkRequestedReverts, FileDecisions } from './file-decisions';
import { showError } from './notify';
import { PullRequestViews } from './pull-request-view';
import { READINESS_SCHEME, ReadinessDocuments } from './readiness';
import { ReviewComments } from './review-comments';
import { DiffFiles, rejectedForReview } from './review-files';
import { affectsServerUrl, readSettings } from './settings';
import { TaskStatusBar } from './status-bar';
import { TaskSessions } from './task-sessions';
import { TRAJECTORY_VIEW_ID, TrajectoryViewProvider } from './trajectory-view';
import { WelcomeView } from './welcome';
import { connectWebSocket } from './ws-socket';

/*
 * Wires the pieces together. Every disposable is pushed to `context.subscriptions` exactly once,
 * here, so deactivation closes sockets, views, timers and emitters in one place.
 */

/** How often the task list is read again, so tasks created or changed elsewhere show up. */
const TASK_LIST_POLL_MS = 10_000;

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
  const connection = register(new Connection(api, tokens, log));
  const sessions = new TaskSessions({
    eventsUrl: (taskId, after) => api().eventsUrl(taskId, after),
    headers: () => api().authHeaders(),
    connect: connectWebSocket,
  });
  register({ dispose: () => sessions.dispose() });
  const state = register(new DockhandState(api, sessions, context.workspaceState));
  const actions = new TaskActions(api, log);
  const comments = register(new ReviewComments());
  const decisions = register(new FileDecisions(context.workspaceState));
  const content = register(new ChangeContentProvider(api));
  register(vscode.workspace.registerTextDocumentContentProvider(BASE_SCHEME, content));
  register(vscode.workspace.registerTextDocumentContentProvider(AGENT_SCHEME, content));
  register(vscode.workspace.registerTextDocumentContentProvider(REVIEWED_SCHEME, content));
  const readiness = register(new ReadinessDocuments());
  const pullRequests = register(new PullRequestViews());
  register(vscode.workspace.registerTextDocumentContentProvider(READINESS_SCHEME, readiness));
  // The review's file list is the server's diff under review, read again when events say it changed.
  const diffFiles = register(
    new DiffFiles({
      getDiff: (taskId) => api().getDiff(taskId),
      onDidReceiveEvents: state.onDidReceiveEvents,
      onDidChangeSelection: state.onDidChangeSelection,
      selectedTaskId: () => state.selectedTaskId,
      log,
    }),
  );
  const onDidChangeReviewFiles: vscode.Event<string> = (listener, thisArgs, disposables) => {
    const both = [decisions.onDidChange(listener, thisArgs), diffFiles.onDidChange(listener, thisArgs)];
    const disposable = { dispose: () => both.forEach((entry) => entry.dispose()) };
    disposables?.push(disposable);
    return disposable;
  };
  /** A checkbox of the panel or the view: a file an earlier approval left out is checked as a decision of its own. */
  const setFileAccepted = (taskId: string, path: string, accepted: boolean): void =>
    decisions.set(taskId, path, accepted, diffFiles.get(taskId)?.leftOut.includes(path) ?? false);
  const changes = register(new ChangesTreeProvider(state, content, decisions, diffFiles));
  const changesView = register(vscode.window.createTreeView('dockhand.changes', { treeDataProvider: changes, showCollapseAll: false }));
  register(changesView.onDidChangeCheckboxState((event) => changes.onCheckboxes(event)));
  // Bound to Space in the Changes view during review (package.json keybindings).
  register(vscode.commands.registerCommand('dockhand.toggleFocusedFile', () => toggleFocusedFile(changesView, decisions)));
  register(new TaskStatusBar(state, connection));
  const welcome = register(new WelcomeView(connection, state, () => api().baseUrl));

  const openDiff = (taskId: string, path: string, line?: number): void => {
    openChangeDiff(taskId, path, line).then(undefined, (error: unknown) => showError(log, `cannot open the diff of ${path}`, error));
  };
  /**
   * Every review decision goes through here: pending line comments go out with "Request changes";
   * the files left out (unchecked) go with "Approve" and "Request changes".
   */
  const reviewTask = async (taskId: string, action: 'approve' | 'request_changes' | 'reject', comment?: string): Promise<boolean> => {
    const all = action === 'request_changes' ? [...comments.pending(taskId), ...(comment ? [{ body: comment }] : [])] : comment ? [{ body: comment }] : [];
    // Read from the server first: the payload names only files of the diff under review as it is now.
    let rejected: string[] = [];
    if (action !== 'reject') {
      try {
        await diffFiles.read(taskId);
      } catch (error) {
        showError(log, 'cannot read the diff under review', error);
        return false;
      }
      rejected = rejectedForReview(taskReviewFiles(diffFiles, decisions, taskId) ?? []);
    }
    const ok = await actions.review(taskId, action, all, rejected);
    if (ok && action === 'request_changes') comments.clear(taskId);
    // The reviewer's decisions stay for the next round; only a finished review forgets them.
    if (ok && action === 'request_changes') decisions.revertsRequested(taskId, rejected);
    else if (ok) decisions.clear(taskId);
    return ok;
  };
  const openChanges = (taskId: string, scope: 'round' | 'all'): void => {
    const title = state.task(taskId)?.ticket.title ?? state.trajectory(taskId).summary.title ?? taskId;
    openTaskChanges(api(), taskId, scope, title).then(undefined, (error: unknown) => showError(log, scope === 'round' ? "cannot open this round's changes" : 'cannot open the changes', error));
  };
  const panel = register(
    new TrajectoryViewProvider(
      context.extensionUri,
      state,
      actions,
      {
        sendTicket: () => void vscode.commands.executeCommand('dockhand.sendTicket'),
        openDiff,
        review: reviewTask,
        taskApprovals: (taskId) => api().listTaskApprovals(taskId),
        cancel: (taskId) => cancelTask({ state, actions }, taskId),
        pendingComments: (taskId) => comments.pending(taskId).flatMap((c) => (c.path && c.line ? [{ path: c.path, line: c.line, body: c.body }] : [])),
        onDidChangeComments: comments.onDidChange,
        reviewFiles: (taskId) => taskReviewFiles(diffFiles, decisions, taskId),
        setFileAccepted,
        onDidChangeFileDecisions: onDidChangeReviewFiles,
        openChanges,
        run: (command) => void vscode.commands.executeCommand(command === 'signIn' ? 'dockhand.signIn' : 'dockhand.showOutput'),
      },
      log,
    ),
  );
  register(vscode.window.registerWebviewViewProvider(TRAJECTORY_VIEW_ID, panel, { webviewOptions: { retainContextWhenHidden: true } }));
  /** Shows the side panel; right after the first task it waits for the task views to be shown. */
  const revealPanel = (): void => {
    welcome.update();
    void Promise.resolve(welcome.ready)
      .then(() => vscode.commands.executeCommand('workbench.view.extension.dockhand'))
      .then(() => vscode.commands.executeCommand(`${TRAJECTORY_VIEW_ID}.focus`))
      .then(undefined, (error: unknown) => log.warn(`Showing the side panel failed: ${describeError(error)}`));
  };
  register(
    new Attention({
      state,
      log,
      show: (taskId) => {
        state.select(taskId);
        revealPanel();
      },
      // One badge on the container: the Changes view is there whenever a task is.
      badgeViews: () => [changesView],
    }),
  );

  // A signed-in window whose token stops working (expired, revoked) says so once, with the
  // reason and the way back, whichever request noticed first (a quiet poll included).
  const signedOutNow = (detail: string): void => {
    if (connection.state.phase !== 'signed_in') return;
    connection.signedOut(detail);
    void vscode.window.showWarningMessage(`Dockhand: signed out: ${detail}`, 'Sign in').then((choice) => {
      if (choice) void vscode.commands.executeCommand('dockhand.signIn');
    });
  };
  const refresh = async (quiet: boolean): Promise<void> => {
    try {
      await state.refreshTasks();
      connection.setReachable(true);
    } catch (error) {
      log.warn(`Listing tasks failed: ${describeError(error)}`);
      if (isSignedOutError(error)) signedOutNow(describeError(error));
      else connection.setReachable(false, describeError(error));
      if (!quiet) showError(log, 'listing tasks failed', error);
    }
  };
  // A stream refused for the token means the window is signed out; the panel says so too.
  register(
    state.onDidChangeStatus(({ status, detail }) => {
      if (status === 'signed_out') signedOutNow(detail ?? 'The server no longer accepts your token.');
    }),
  );
  register(
    checkRequestedReverts({
      decisions,
      onDidReceiveEvents: state.onDidReceiveEvents,
      diffFiles: async (taskId) => (await api().getDiff(taskId)).files.map((file) => file.path),
      log,
      show: (taskId) => {
        state.select(taskId);
        revealPanel();
      },
    }),
  );
  // Task state changes the streams report are written to the log in full (the panel keeps it short).
  register(
    state.onDidReceiveEvents(({ taskId, events }) => {
      for (const event of events) if (event.type === 'task.failed') log.error(`Task ${taskId} failed (${event.data.code}): ${event.data.message}`);
    }),
  );

  registerCommands({
    api,
    tokens,
    connection,
    state,
    actions,
    comments,
    readiness,
    pullRequests,
    log,
    register: (disposable) => void register(disposable),
    revealPanel,
    refresh,
    openDiff,
    openChanges,
    review: reviewTask,
    reconnect: () => sessions.reconnectAll(),
  });

  const checkAndRefresh = async (): Promise<void> => {
    const result = await connection.check();
    if (result.phase === 'signed_in') {
      sessions.reconnectAll();
      await refresh(true);
    }
  };
  register(
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!affectsServerUrl(event)) return;
      client = createClient(tokens);
      log.info(`Server URL is now ${client.baseUrl}`);
      void checkAndRefresh();
    }),
  );
  // Another window signed in or out.
  register(tokens.onDidChange(() => void checkAndRefresh()));
  const poll = setInterval(() => {
    if (connection.state.phase === 'signed_in') void refresh(true);
  }, TASK_LIST_POLL_MS);
  register({ dispose: () => clearInterval(poll) });
  log.info(`Dockhand activated; server ${client.baseUrl}`);
  void checkAndRefresh();
}

export function deactivate(): void {
  // Everything is disposed through context.subscriptions.
}

function createClient(tokens: TokenStore): ApiClient {
  return new ApiClient({ baseUrl: readSettings().serverUrl, token: () => tokens.get() });
}
