import { ACTIVE_STATES, type TaskState } from '@dockhand/protocol';
import { stateLabel } from '@dockhand/webview-ui/trajectory';
import * as vscode from 'vscode';
import type { Connection } from './connection';
import type { DockhandState } from './dockhand-state';

/*
 * One status bar item: the connection when it is not fine (checking, no server, signed out,
 * disconnected: each its own text and icon, never a spinning "running"), otherwise the selected
 * task's state, turns and cost with an icon per state. Turns and cost come from the same folded
 * events the side panel shows, so the two agree.
 */

const STATE_ICONS: Partial<Record<TaskState, string>> = {
  queued: '$(clock)',
  awaiting_approval: '$(bell-dot)',
  awaiting_review: '$(bell-dot)',
  paused: '$(debug-pause)',
  pr_open: '$(git-pull-request)',
  merged: '$(git-merge)',
  closed: '$(circle-slash)',
  reverted: '$(discard)',
  failed: '$(error)',
  cancelled: '$(circle-slash)',
  budget_exhausted: '$(warning)',
};

export function stateIcon(state: TaskState): string {
  return STATE_ICONS[state] ?? (ACTIVE_STATES.includes(state) ? '$(sync~spin)' : '$(circle-outline)');
}

export class TaskStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly state: DockhandState,
    private readonly connection: Connection,
  ) {
    this.item = vscode.window.createStatusBarItem('dockhand.status', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'Dockhand task';
    this.disposables.push(
      this.item,
      state.onDidChangeSelection(() => this.update()),
      state.onDidChangeTasks(() => this.update()),
      state.onDidReceiveEvents(({ taskId }) => taskId === state.selectedTaskId && this.update()),
      connection.onDidChange(() => this.update()),
    );
    this.update();
  }

  /** The text shown, also used by tests. */
  get text(): string {
    return this.item.text;
  }

  update(): void {
    const connection = this.connection.state;
    this.item.backgroundColor = undefined;
    if (connection.phase !== 'signed_in' || connection.disconnected) {
      const [text, tooltip, command] =
        connection.phase === 'checking'
          ? ['$(loading~spin) Dockhand: connecting', 'Dockhand: checking the server…', 'dockhand.checkConnection']
          : connection.phase === 'no_server'
            ? ['$(debug-disconnect) Dockhand: no server', `Dockhand: ${connection.detail ?? 'the server does not answer'}\nClick to set the server URL.`, 'dockhand.setServerUrl']
            : connection.phase === 'signed_out'
              ? ['$(account) Dockhand: signed out', `Dockhand: ${connection.detail ?? 'not signed in'}\nClick to sign in.`, 'dockhand.signIn']
              : ['$(debug-disconnect) Dockhand: disconnected', `Dockhand lost the server: ${connection.detail ?? ''}\nClick to check again.`, 'dockhand.checkConnection'];
      if (connection.disconnected || connection.phase === 'no_server') this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
      this.item.text = text;
      this.item.tooltip = tooltip;
      this.item.command = command;
      this.item.show();
      return;
    }
    this.item.command = 'dockhand.showTasks';
    const taskId = this.state.selectedTaskId;
    if (!taskId) {
      this.item.text = '$(rocket) Dockhand';
      this.item.tooltip = `Dockhand: signed in as ${connection.user ?? 'you'}; no task selected. Click to show tasks.`;
      this.item.show();
      return;
    }
    const summary = this.state.trajectory(taskId).summary;
    const task = this.state.task(taskId);
    // The folded events when there are any (the panel shows the same); the listed task otherwise.
    const folded = Boolean(summary.title);
    const state = folded ? summary.state : (task?.state ?? summary.state);
    const turns = folded ? summary.turnsUsed : (task?.usage.turns ?? 0);
    const cost = folded ? summary.costUsd : (task?.usage.costUsd ?? 0);
    if (state === 'failed' || state === 'budget_exhausted') this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
    else if (state === 'awaiting_review' || state === 'awaiting_approval' || state === 'paused') this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
    // A pause asked and not reached yet: the agent still works, and says it will stop.
    const label = folded && summary.pauseRequestedBy && state !== 'paused' ? 'pausing…' : stateLabel(state);
    this.item.text = `${stateIcon(state)} Dockhand: ${label} · ${turns} turn${turns === 1 ? '' : 's'} · $${cost.toFixed(2)}`;
    this.item.tooltip = `${summary.title || task?.ticket.title || taskId}\nClick to show tasks.`;
    this.item.show();
  }

  dispose(): void {
    for (const disposable of this.disposables) disposable.dispose();
  }
}
