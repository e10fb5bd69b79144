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
  const sets = eventSets(event);
  const update: ProjectionUpdate = { state: sets.state ?? current.state, usage: current.usage, prUrl: sets.prUrl, error: sets.error };
  if (event.type === 'model.turn') {
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
  }
  return update;
}

/**
 * Whether an event of this type adds to its row's usage (`project`'s `model.turn` branch) — so its change depends on the row, not
 * on the event alone (`eventSets`): a store must read the row before it writes it.
 */
export function addsToUsage(type: string): boolean {
  return type === 'model.turn';
}

/**
 * The part of `project` that the event alone decides (`null`: the row keeps its value): the whole
 * change for every event that does not add to usage (`addsToUsage`), so a store can write it
 * without reading the row first.
 */
export function eventSets(event: TaskEvent): { state: TaskState | null; prUrl: string | null; error: string | null } {
  const sets = { state: null as TaskState | null, prUrl: null as string | null, error: null as string | null };
  if (event.type === 'task.state') {
    sets.state = event.data.state;
    if (['failed', 'cancelled', 'budget_exhausted'].includes(event.data.state) && event.data.reason) sets.error = event.data.reason;
  } else if (event.type === 'pr.opened') {
    sets.prUrl = event.data.url;
  } else if (event.type === 'task.failed') {
    sets.error = event.data.message;
  }
  return sets;
}
