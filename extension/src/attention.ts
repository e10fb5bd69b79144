import type { Task, TaskEvent } from '@dockhand/protocol';
import { classifyFailure, describeFailure } from '@dockhand/webview-ui/failures';
import * as vscode from 'vscode';
import type { DockhandState } from './dockhand-state';

/*
 * Asks for the developer's attention when one of their tasks needs them: a notification with the
 * action that answers it when a task waits for review or for a decision on a command, fails, or
 * opens its pull request; and a badge on the Dockhand view container with how many wait. Only
 * news counts: replayed events older than this window, and states the first task list already
 * showed, say nothing.
 */

/** States in which a task waits for its requester. */
export const WAITING_STATES: readonly Task['state'][] = ['awaiting_review', 'awaiting_approval'];

export interface AttentionDeps {
  state: DockhandState;
  log: vscode.LogOutputChannel;
  /** Selects the task and shows the side panel. */
  show(taskId: string): void;
  /** Views whose badge shows the count (the container shows it on its activity bar entry). */
  badgeViews(): Array<{ badge?: vscode.ViewBadge }>;
  /** Events before this time (ms) are history, not news. */
  since?: number;
}

export class Attention implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  private readonly announced = new Set<string>();
  /** States last seen in the task list, to notice changes of tasks this window does not follow. */
  private listed: Map<string, Task['state']> | undefined;
  private readonly since: number;

  constructor(private readonly deps: AttentionDeps) {
    this.since = deps.since ?? Date.now();
    this.disposables.push(
      deps.state.onDidReceiveEvents(({ taskId, events }) => this.receive(taskId, events)),
      deps.state.onDidChangeTasks(() => this.tasksChanged()),
    );
  }

  /** How many of the developer's tasks wait for them. */
  waitingCount(): number {
    return this.deps.state.tasks.filter((task) => WAITING_STATES.includes(task.state) && !this.deps.state.isKept(task.id)).length;
  }

  updateBadge(): void {
    const count = this.waitingCount();
    const badge = count ? { value: count, tooltip: `${count} Dockhand task${count === 1 ? '' : 's'} waiting for you` } : undefined;
    for (const view of this.deps.badgeViews()) view.badge = badge;
  }

  dispose(): void {
    for (const disposable of this.disposables) disposable.dispose();
  }

  private title(taskId: string): string {
    return this.deps.state.task(taskId)?.ticket.title ?? this.deps.state.trajectory(taskId).summary.title ?? taskId;
  }

  private receive(taskId: string, events: TaskEvent[]): void {
    if (this.deps.state.isKept(taskId)) return;
    // A review that ended in the same batch (rejected, approved, changes requested) is not news.
    const lastState = events.filter((event) => event.type === 'task.state').at(-1);
    for (const event of events) {
      if (Date.parse(event.ts) < this.since - 2_000) continue;
      switch (event.type) {
        case 'task.state':
          if (event.data.state === 'awaiting_review' && event === lastState) this.reviewReady(taskId, event.seq);
          break;
        case 'approval.requested':
          if (event.data.kind === 'command') this.decisionNeeded(taskId, event.data.approvalId, event.data.command ?? '');
          break;
        case 'task.failed':
          this.failed(taskId, classifyFailure(event.data.code, event.data.message));
          break;
        case 'pr.opened':
          this.pullRequest(taskId, event.data.url);
          break;
      }
    }
    this.updateBadge();
  }

  /** Tasks this window does not follow live: their news comes from the task list. */
  private tasksChanged(): void {
    const previous = this.listed;
    this.listed = new Map(this.deps.state.tasks.map((task) => [task.id, task.state]));
    this.updateBadge();
    if (!previous) return;
    for (const task of this.deps.state.tasks) {
      if (this.deps.state.sessions.status(task.id) || this.deps.state.isKept(task.id)) continue;
      const before = previous.get(task.id);
      if (before === task.state) continue;
      if (task.state === 'awaiting_review') this.reviewReady(task.id, task.lastSeq);
      if (task.state === 'awaiting_approval') this.decisionNeeded(task.id, `list-${task.lastSeq}`, '');
      if (task.state === 'failed') this.failed(task.id, classifyFailure('internal', ''));
      if (task.state === 'pr_open' && task.prUrl) this.pullRequest(task.id, task.prUrl);
    }
  }

  private once(key: string): boolean {
    if (this.announced.has(key)) return false;
    this.announced.add(key);
    return true;
  }

  private reviewReady(taskId: string, seq: number): void {
    if (!this.once(`${taskId}:review:${seq}`)) return;
    this.ask(vscode.window.showInformationMessage(`Dockhand: “${this.title(taskId)}” is ready for your review.`, 'Review'), { Review: () => this.openReview(taskId) });
  }

  /**
   * A review notification stays in the notification centre after the review is over (rejected,
   * approved, or changes requested, maybe from another window): its button says so then instead
   * of opening a task with nothing to review.
   */
  private openReview(taskId: string): void {
    const state = this.currentState(taskId);
    if (state === undefined || state === 'awaiting_review') return this.deps.show(taskId);
    const ended = state === 'closed' ? 'was rejected' : `is ${state.replace(/_/g, ' ')} now`;
    void vscode.window.showInformationMessage(`Dockhand: “${this.title(taskId)}” ${ended}; there is nothing to review.`);
  }

  private currentState(taskId: string): Task['state'] | undefined {
    // The live stream when this window followed the task, else the task list.
    const trajectory = this.deps.state.trajectory(taskId);
    return trajectory.lastSeq > 0 ? trajectory.summary.state : this.deps.state.task(taskId)?.state;
  }

  private decisionNeeded(taskId: string, approvalId: string, command: string): void {
    if (!this.once(`${taskId}:approval:${approvalId}`)) return;
    const what = command ? `wants to run \`${command.length > 80 ? `${command.slice(0, 79)}…` : command}\`` : 'waits for your decision';
    this.ask(vscode.window.showWarningMessage(`Dockhand: the agent on “${this.title(taskId)}” ${what}.`, 'Decide'), { Decide: () => this.deps.show(taskId) });
  }

  private failed(taskId: string, failure: ReturnType<typeof classifyFailure>): void {
    if (!this.once(`${taskId}:failed`)) return;
    this.ask(vscode.window.showErrorMessage(`Dockhand: “${this.title(taskId)}” failed. ${describeFailure(failure)}`, 'Show task', 'Show details'), {
      'Show task': () => this.deps.show(taskId),
      'Show details': () => this.deps.log.show(true),
    });
  }

  private pullRequest(taskId: string, url: string): void {
    if (!this.once(`${taskId}:pr`)) return;
    this.ask(vscode.window.showInformationMessage(`Dockhand opened a pull request: ${url}`, 'Open pull request'), {
      'Open pull request': () => void vscode.commands.executeCommand('dockhand.openPullRequest', taskId),
    });
  }

  private ask(choice: Thenable<string | undefined>, actions: Record<string, () => void>): void {
    void Promise.resolve(choice).then((picked) => {
      if (picked) actions[picked]?.();
    });
  }
}
