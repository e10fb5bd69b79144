import type { Task } from '@dockhand/protocol';
import { SqliteStore } from '../store/sqlite';

/*
 * Runs may share a fleet's data directory (`--data-dir`, for its mirrors, snapshots and
 * toolchains) and so its store. A run's tasks are the ones whose ticket URL is under the run's
 * own `dockhand-eval://<run id>/` (the run id: its run directory and when it began), and the run's
 * fleet claims only those: another run's task left queued or running when that run stopped stays
 * for that run to resume (before, the scheduler took it: a scripted run failed it for want of a
 * cassette, a model run spent its budget and its slots on it).
 */

/** Which run a task belongs to: its ticket's URL (`dockhand-eval://<run>/<instance>[?attempt=k]`). */
export function runUrl(runId: string, instanceId: string): string {
  return `${runPrefix(runId)}${encodeURIComponent(instanceId)}`;
}

function runPrefix(runId: string): string {
  return `dockhand-eval://${encodeURIComponent(runId)}/`;
}

/** The task is one of this run's instances. */
export function isTaskOfRun(task: Task, runId: string): boolean {
  return task.ticket.kind === 'issue' && task.ticket.url?.startsWith(runPrefix(runId)) === true;
}

/**
 * The SQLite store with the scheduler's queue narrowed to the tasks `claims` accepts; everything
 * else (the API, other tasks' reads) sees the whole store.
 */
export class RunScopedStore extends SqliteStore {
  constructor(
    path: string,
    private readonly claims: (task: Task) => boolean,
  ) {
    super(path);
  }

  override async listRunnable(limit: number, at = Date.now()): Promise<Task[]> {
    // Other runs' tasks come first in the queue's order: the whole queue is read, then narrowed.
    const all = await super.listRunnable(Number.MAX_SAFE_INTEGER, at);
    return all.filter((task) => this.claims(task)).slice(0, limit);
  }
}
