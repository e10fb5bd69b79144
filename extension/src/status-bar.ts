import { ACTIVE_STATES, isFinalState } from '@dockhand/protocol';
import { stateLabel } from '@dockhand/webview-ui/trajectory';
import * as vscode from 'vscode';
import type { DockhandState } from './dockhand-state';

/** One status bar item: the selected task's state, turns and cost; a click opens the task list. */
export class TaskStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly state: DockhandState) {
    this.item = vscode.window.createStatusBarItem('dockhand.status', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'Dockhand task';
    this.item.command = 'dockhand.showTasks';
    this.disposables.push(
      this.item,
      state.onDidChangeSelection(() => this.update()),
      state.onDidChangeTasks(() => this.update()),
      state.onDidReceiveEvents(({ taskId }) => taskId === state.selectedTaskId && this.update()),
    );
    this.update();
  }

  /** The text shown, also used by tests. */
  get text(): string {
    return this.item.text;
  }

  update(): void {
    const taskId = this.state.selectedTaskId;
    if (!taskId) {
      this.item.text = '$(rocket) Dockhand';
      this.item.tooltip = 'Dockhand: no task selected. Click to show tasks.';
      this.item.show();
      return;
    }
    const summary = this.state.trajectory(taskId).summary;
    const task = this.state.task(taskId);
    const state = summary.title ? summary.state : (task?.state ?? summary.state);
    const turns = Math.max(summary.turnsUsed, task?.usage.turns ?? 0);
    const cost = Math.max(summary.costUsd, task?.usage.costUsd ?? 0);
    const icon = isFinalState(state)
      ? '$(check)'
      : state === 'awaiting_approval' || state === 'awaiting_review'
        ? '$(bell)'
        : state === 'pr_open'
          ? '$(git-pull-request)'
          : ACTIVE_STATES.includes(state) || state === 'queued'
            ? '$(sync~spin)'
            : '$(circle-outline)';
    this.item.text = `${icon} Dockhand: ${stateLabel(state)} · ${turns} turn${turns === 1 ? '' : 's'} · $${cost.toFixed(2)}`;
    this.item.tooltip = `${summary.title || task?.ticket.title || taskId}\nClick to show tasks.`;
    this.item.show();
  }

  dispose(): void {
    for (const disposable of this.disposables) disposable.dispose();
  }
}
