import { TaskUsage, type TaskEvent, type TaskState } from '@dockhand/protocol';

export interface Projection {
  state: TaskState;
  /** `TaskUsage` as stored (JSON text). */
  usage: string;
}

export interface ProjectionUpdate extends Projection {
  /** Set when this event carries one; `null` keeps the task's current value. */
  prUrl: string | null;
  error: string | null;
}

/**
 * What one event changes in its task's row (state, usage, PR link, error): the one rule both the
 * SQLite and the Postgres store apply when they append an event.
 */
export function project(current: Projection, event: TaskEvent): ProjectionUpdate {
  const update: ProjectionUpdate = { state: current.state, usage: current.usage, prUrl: null, error: null };
  if (event.type === 'task.state') {
    update.state = event.data.state;
    if (['failed', 'cancelled', 'budget_exhausted'].includes(update.state) && event.data.reason) update.error = event.data.reason;
  } else if (event.type === 'model.turn') {
    const usage = TaskUsage.parse(JSON.parse(current.usage));
    const turn = event.data.usage;
    update.usage = JSON.stringify({
      turns: usage.turns + 1,
      inputTokens: usage.inputTokens + turn.inputTokens,
      outputTokens: usage.outputTokens + turn.outputTokens,
      cacheReadTokens: usage.cacheReadTokens + turn.cacheReadTokens,
      cacheWriteTokens: usage.cacheWriteTokens + turn.cacheWriteTokens,
      costUsd: usage.costUsd + event.data.costUsd,
    });
  } else if (event.type === 'pr.opened') {
    update.prUrl = event.data.url;
  } else if (event.type === 'task.failed') {
    update.error = event.data.message;
  }
  return update;
}
