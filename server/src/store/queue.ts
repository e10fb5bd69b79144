import type { Task, TaskState } from '@dockhand/protocol';
import type { Lease, Store } from './types';

/** A task a worker now holds, and the fencing epoch its writes must carry (`lease-fence.ts`). */
export interface Claim {
  task: Task;
  epoch: number;
  expiresAt: number;
}

export type FencedLease = Lease & { epoch: number };

/**
 * A store that is also a queue shared by several workers (Postgres): one call claims up to
 * `limit` runnable tasks (normal priority before routine, oldest first) with a lease each, and
 * says each lease's epoch. The scheduler prefers it to list-then-acquire, which on a shared store
 * would have every worker race for the same first task. `exclude`: tasks this worker already runs.
 */
export interface ClaimingStore {
  claimRunnable(workerId: string, limit: number, ttlMs: number, options?: { exclude?: string[]; now?: number }): Promise<Claim[]>;
  /**
   * The heartbeat in one round trip: `renewLease`, and the task's state as the renewal saw it
   * (absent when the lease was not renewed).
   */
  renewLeaseWithState(taskId: string, workerId: string, ttlMs: number): Promise<{ renewed: boolean; state?: TaskState }>;
}

export function canClaim(store: Store): store is Store & ClaimingStore {
  return 'claimRunnable' in store && typeof store.claimRunnable === 'function';
}
