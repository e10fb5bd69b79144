import { z } from 'zod';

/**
 * Task life cycle. `running ⇄ awaiting_approval` while the agent works; the server alone moves a
 * task to `verifying` (never the model's word). The last three are failure ends.
 */
export const TASK_STATES = [
  'queued',
  'provisioning',
  'running',
  'awaiting_approval',
  'verifying',
  'awaiting_review',
  /**
   * The developer paused the agent: it stopped between turns (the tool call in flight finished),
   * keeps its sandbox, holds no worker and its wall clock does not run. Only a resume (API) moves
   * it on, back to `running`.
   */
  'paused',
  'pushing',
  'pr_open',
  'merged',
  'closed',
  'reverted',
  'failed',
  'cancelled',
  'budget_exhausted',
] as const;

export const TaskState = z.enum(TASK_STATES);
export type TaskState = z.infer<typeof TaskState>;

/** States after which no agent work happens any more (PR outcome states included). */
export const FINAL_STATES: readonly TaskState[] = [
  'merged',
  'closed',
  'reverted',
  'failed',
  'cancelled',
  'budget_exhausted',
];

/** States in which a task is owned by a worker and may be resumed after a crash. */
export const ACTIVE_STATES: readonly TaskState[] = [
  'provisioning',
  'running',
  'awaiting_approval',
  'verifying',
  'pushing',
];

export function isFinalState(state: TaskState): boolean {
  return FINAL_STATES.includes(state);
}
