import type { Task, TaskEvent } from '@dockhand/protocol';
import { applyEvents, createTrajectory, type Trajectory } from '@dockhand/webview-ui/trajectory';
import * as vscode from 'vscode';
import type { ApiClient } from './api-client';
import type { StreamStatus } from './event-stream';
import type { TaskSessions } from './task-sessions';

/*
 * What the window knows about Dockhand: the task list, which task is selected, and a folded view
 * of each followed task's events (the same fold the side panel uses). Views listen to its events;
 * it holds no UI of its own.
 */

export class DockhandState implements vscode.Disposable {
  private tasksById = new Map<string, Task>();
  /** Tasks opened from elsewhere (another user's, from the approvals inbox): kept across refreshes. */
  private readonly kept = new Set<string>();
  private selected: string | undefined;
  private readonly trajectories = new Map<string, Trajectory>();
  private readonly disposables: vscode.Disposable[] = [];

  private readonly tasksChanged = new vscode.EventEmitter<void>();
  private readonly selectionChanged = new vscode.EventEmitter<string | undefined>();
  private readonly eventsArrived = new vscode.EventEmitter<{ taskId: string; events: TaskEvent[] }>();
  private readonly statusChanged = new vscode.EventEmitter<{ taskId: string; status: StreamStatus; detail?: string }>();
  readonly onDidChangeTasks = this.tasksChanged.event;
  readonly onDidChangeSelection = this.selectionChanged.event;
  readonly onDidReceiveEvents = this.eventsArrived.event;
  readonly onDidChangeStatus = this.statusChanged.event;

  constructor(
    private readonly api: () => ApiClient,
    readonly sessions: TaskSessions,
    private readonly memento: vscode.Memento,
  ) {
    this.disposables.push(this.tasksChanged, this.selectionChanged, this.eventsArrived, this.statusChanged);
    const subscription = sessions.subscribe({
      onEvents: (taskId, events) => {
        const trajectory = this.trajectory(taskId);
        applyEvents(trajectory, events);
        const task = this.tasksById.get(taskId);
        if (task) {
          // Keep the list's state and cost current without polling.
          task.state = trajectory.summary.state;
          task.usage.costUsd = Math.max(task.usage.costUsd, trajectory.summary.costUsd);
          task.usage.turns = Math.max(task.usage.turns, trajectory.summary.turnsUsed);
          if (trajectory.summary.prUrl) task.prUrl = trajectory.summary.prUrl;
        }
        this.eventsArrived.fire({ taskId, events });
      },
      onStatus: (taskId, status, detail) => this.statusChanged.fire({ taskId, status, detail }),
    });
    this.disposables.push({ dispose: () => subscription.dispose() });
    this.selected = memento.get<string>('dockhand.selectedTaskId');
  }

  get tasks(): Task[] {
    return [...this.tasksById.values()].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  }

  get selectedTaskId(): string | undefined {
    return this.selected;
  }

  /** Opened from elsewhere (another user's task): not one of the developer's own. */
  isKept(taskId: string): boolean {
    return this.kept.has(taskId);
  }

  task(taskId: string): Task | undefined {
    return this.tasksById.get(taskId);
  }

  trajectory(taskId: string): Trajectory {
    let trajectory = this.trajectories.get(taskId);
    if (!trajectory) {
      trajectory = createTrajectory(taskId);
      this.trajectories.set(taskId, trajectory);
    }
    return trajectory;
  }

  async refreshTasks(): Promise<void> {
    const tasks = await this.api().listTasks();
    const next = new Map<string, Task>();
    for (const id of this.kept) {
      const task = this.tasksById.get(id);
      if (task) next.set(id, task);
    }
    for (const task of tasks) {
      const trajectory = this.trajectories.get(task.id);
      // Live events may be ahead of the list; keep the newer state.
      if (trajectory && trajectory.lastSeq > task.lastSeq) task.state = trajectory.summary.state;
      next.set(task.id, task);
    }
    this.tasksById = next;
    this.tasksChanged.fire();
    if (this.selected && !next.has(this.selected)) this.select(undefined);
    else if (this.selected) this.sessions.follow(this.selected);
  }

  /** `keep`: the task is not in the user's own list (see `kept`); keep it until the window closes. */
  addTask(task: Task, options: { keep?: boolean } = {}): void {
    if (options.keep) this.kept.add(task.id);
    this.tasksById.set(task.id, task);
    this.tasksChanged.fire();
  }

  select(taskId: string | undefined): void {
    if (taskId) this.sessions.follow(taskId);
    if (taskId === this.selected) return;
    this.selected = taskId;
    void this.memento.update('dockhand.selectedTaskId', taskId);
    this.selectionChanged.fire(taskId);
  }

  dispose(): void {
    for (const disposable of this.disposables) disposable.dispose();
  }
}
