import { AsyncLocalStorage } from 'node:async_hooks';

/** Why a run gives its task back to the queue, and how long nobody should take it up again. */
export interface HandBackRequest {
  reason: string;
  delayMs: number;
}

const handlers = new AsyncLocalStorage<(request: HandBackRequest) => void>();

/**
 * Runs `work` with a way for code deep inside a task's run (the model client, when the model has
 * been unreachable for its whole retry budget) to hand the task back to the scheduler that runs
 * it, instead of failing it: `requestHandBack` calls `handler`, which aborts the run; the lease
 * is then kept until `delayMs` from now instead of released, so the task is claimed again — by
 * any worker — once that has passed. Carried in the async context like the lease fence.
 */
export function withHandBack<T>(handler: (request: HandBackRequest) => void, work: () => T): T {
  return handlers.run(handler, work);
}

/** False when no scheduler runs this code (a unit test, the evaluation harness): the caller fails as before. */
export function requestHandBack(request: HandBackRequest): boolean {
  const handler = handlers.getStore();
  if (!handler) return false;
  handler(request);
  return true;
}

/** Whether a hand-back is possible here (so the caller can say so before it asks). */
export function canHandBack(): boolean {
  return handlers.getStore() !== undefined;
}
