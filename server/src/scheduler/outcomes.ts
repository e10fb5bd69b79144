import type { Task, TaskEvent } from '@dockhand/protocol';
import { isOutcomeFinal, type Forge, type PullRequestOutcome } from '../forge';
import type { Logger } from '../log';
import type { EventLog } from '../store/hub';

const DAY_MS = 86_400_000;

/**
 * Follows the PRs Dockhand opened until there is nothing more to learn: open → merged or closed,
 * and merged → reverted within the forge's revert window (14 days). Each new outcome is recorded as
 * `pr.outcome` and the matching task state; metrics (merge rate, revert rate) read those events.
 */
export class OutcomePoller {
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  /**
   * `leader`: on a fleet of processes (Postgres), asked before each poll; only the process that
   * holds the fleet's leadership polls, so one merge is recorded once. Absent: this process is the fleet.
   */
  constructor(private readonly options: { log: EventLog; forge: Forge; intervalMs: number; logger?: Logger; leader?: () => Promise<boolean> }) {}

  start(): void {
    this.timer = setInterval(() => void this.pollOnce().catch((error: unknown) => this.options.logger?.warn({ err: error }, 'PR outcome poll failed')), this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Returns the tasks whose outcome changed. */
  async pollOnce(now = new Date()): Promise<string[]> {
    if (this.running) return [];
    this.running = true;
    try {
      if (this.options.leader && !(await this.options.leader())) return [];
      const changed: string[] = [];
      for (const task of [...(await this.tasksIn('pr_open')), ...(await this.tasksIn('merged'))]) {
        if (task.state === 'merged' && now.getTime() - Date.parse(task.updatedAt) > 15 * DAY_MS) continue;
        if (await this.check(task, now)) changed.push(task.id);
      }
      return changed;
    } finally {
      this.running = false;
    }
  }

  private async tasksIn(state: 'pr_open' | 'merged'): Promise<Task[]> {
    const tasks: Task[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.options.log.store.listTasks({ state, limit: 200, ...(cursor ? { cursor } : {}) });
      tasks.push(...page.tasks);
      cursor = page.nextCursor;
    } while (cursor);
    return tasks;
  }

  private async check(task: Task, now: Date): Promise<boolean> {
    const events = await this.options.log.store.listEvents(task.id);
    const opened = [...events].reverse().find((e): e is Extract<TaskEvent, { type: 'pr.opened' }> => e.type === 'pr.opened');
    if (!opened) return false;
    const last = [...events].reverse().find((e): e is Extract<TaskEvent, { type: 'pr.outcome' }> => e.type === 'pr.outcome');
    const lastOutcome: PullRequestOutcome | undefined = last ? { outcome: last.data.outcome, at: last.data.at } : undefined;
    if (isOutcomeFinal(lastOutcome, { now })) return false;
    const outcome = await this.options.forge.getOutcome(task.context.repo, opened.data.number, { now });
    if (!outcome || outcome.outcome === lastOutcome?.outcome) return false;
    await this.options.log.append(task.id, { type: 'pr.outcome', data: { outcome: outcome.outcome, at: outcome.at } });
    await this.options.log.append(task.id, { type: 'task.state', data: { state: outcome.outcome, reason: `pull request ${outcome.outcome}` } });
    return true;
  }
}
