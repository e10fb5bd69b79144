import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The fencing token of the lease a piece of work runs under. The scheduler runs a claimed task
 * (and its heartbeat) inside `withLeaseFence`; a store shared by several workers (Postgres) reads
 * it from the async context of every write for that task and refuses the write unless the lease
 * still has this worker and epoch. So a worker whose lease was taken over — paused, cut off, or
 * simply slow — can no longer append events, resolve approvals or record a result, even though
 * its code does not know yet that it lost the task.
 *
 * Writes made outside a fence (the API recording a developer's decision, a new task) are not
 * fenced: they do not depend on who works on the task. The embedded SQLite store has one process
 * and one scheduler, which aborts its work when a renewal fails; it ignores the fence.
 */
export interface LeaseFence {
  taskId: string;
  workerId: string;
  epoch: number;
}

const storage = new AsyncLocalStorage<LeaseFence>();

export function withLeaseFence<T>(fence: LeaseFence, work: () => T): T {
  return storage.run(fence, work);
}

/** The fence of the current async context when it covers `taskId`. */
export function currentFence(taskId: string): LeaseFence | undefined {
  const fence = storage.getStore();
  return fence && fence.taskId === taskId ? fence : undefined;
}
