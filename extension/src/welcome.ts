import { isFinalState, type TaskState } from '@dockhand/protocol';
import * as vscode from 'vscode';
import type { Connection } from './connection';
import type { DockhandState } from './dockhand-state';

/*
 * First run and the palette. The "Welcome" view is an empty tree whose `viewsWelcome` content
 * (package.json) says what to do next: no server at the URL, signed out, or no tasks yet; the
 * description beside its title names the URL. It shows until the window is signed in with a task, then
 * the Trajectory and Changes views take its place. Context keys for the `when` clauses of the
 * palette, the menus and the keybindings are set here from the selected task.
 */

export class WelcomeView implements vscode.TreeDataProvider<never>, vscode.Disposable {
  readonly view: vscode.TreeView<never>;
  /** Settles once the workbench knows whether the task views are shown. */
  ready: Thenable<unknown> = Promise.resolve();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly connection: Connection,
    private readonly state: DockhandState,
    private readonly serverUrl: () => string,
  ) {
    this.view = vscode.window.createTreeView('dockhand.welcome', { treeDataProvider: this });
    this.disposables.push(
      this.view,
      connection.onDidChange(() => this.update()),
      state.onDidChangeTasks(() => this.update()),
      state.onDidChangeSelection(() => this.update()),
      state.onDidReceiveEvents(({ taskId }) => taskId === state.selectedTaskId && this.update()),
    );
    this.update();
  }

  getTreeItem(): vscode.TreeItem {
    return new vscode.TreeItem('');
  }

  getChildren(): never[] {
    return [];
  }

  update(): void {
    const connection = this.connection.state;
    // The welcome content (package.json viewsWelcome) shows only while the view has no message,
    // so the URL goes in the view's description, beside its title.
    const url = this.serverUrl();
    this.view.description =
      connection.phase === 'signed_in' ? `${connection.user ?? ''} @ ${url}` : connection.phase === 'no_server' ? `no Dockhand server at ${url}` : url;
    const ready = connection.phase === 'signed_in' && this.state.tasks.length > 0;
    this.ready = setContext('dockhand.ready', ready) ?? this.ready;
    void setContext('dockhand.hasTasks', this.state.tasks.length > 0);
    const taskId = this.state.selectedTaskId;
    const summary = taskId ? this.state.trajectory(taskId).summary : undefined;
    const state: TaskState | undefined = taskId ? (summary?.title ? summary.state : this.state.task(taskId)?.state) : undefined;
    void setContext('dockhand.hasTask', Boolean(taskId));
    void setContext('dockhand.taskState', state ?? '');
    void setContext('dockhand.taskActive', Boolean(state && !isFinalState(state) && state !== 'awaiting_review' && state !== 'pr_open' && state !== 'pushing'));
    void setContext('dockhand.hasPullRequest', Boolean(summary?.prUrl ?? (taskId && this.state.task(taskId)?.prUrl)));
    void setContext('dockhand.hasChanges', Boolean(summary && summary.changedFiles.size > 0));
    void setContext('dockhand.reviewRound', summary?.round ?? 0);
  }

  dispose(): void {
    for (const disposable of this.disposables) disposable.dispose();
  }
}

/** setContext only when the value changed (it crosses to the workbench every time). */
const contextValues = new Map<string, unknown>();
function setContext(key: string, value: unknown): Thenable<unknown> | undefined {
  if (contextValues.get(key) === value) return undefined;
  contextValues.set(key, value);
  return vscode.commands.executeCommand('setContext', key, value);
}
