import { z } from 'zod';

/*
 * `GET /v1/tasks/:id/chain`: the server recomputed the task's hash chain (issue #33) and says what
 * it checked. `dockhand verify task <id>` prints it and exits non-zero when `ok` is false.
 */

/** What differs at the first event that does not match. */
export const ChainFailureKind = z.enum([
  /** The hash recomputed from the event's stored fields is not the stored one: the row was edited. */
  'hash_mismatch',
  /** A seq is absent (a row deleted), the log ends before the task's last seq, or a chained event has no hash. */
  'missing',
  /** The row is intact but sits at another place than where it was written (its hash fits another seq). */
  'reordered',
  /** A row the task's record does not account for (beyond its last seq). */
  'extra',
]);
export type ChainFailureKind = z.infer<typeof ChainFailureKind>;

export const ChainFailure = z.object({
  seq: z.number().int(),
  /** The event's type as stored; absent when the row itself is missing. */
  type: z.string().optional(),
  kind: ChainFailureKind,
  detail: z.string(),
});
export type ChainFailure = z.infer<typeof ChainFailure>;

export const ChainCheck = z.object({
  name: z.enum(['sequence', 'chain start', 'links', 'head']),
  ok: z.boolean(),
  detail: z.string(),
});
export type ChainCheck = z.infer<typeof ChainCheck>;

export const TaskChainHead = z.object({ seq: z.number().int().min(1), hash: z.string().regex(/^[0-9a-f]{64}$/) });
export type TaskChainHead = z.infer<typeof TaskChainHead>;

export const TaskChainReport = z.object({
  taskId: z.string(),
  ok: z.boolean(),
  /** The task's last seq as its row records it. */
  lastSeq: z.number().int().min(0),
  /** Events 1–`unchainedThrough` were written before the chain existed: not checked beyond their seqs. */
  unchainedThrough: z.number().int().min(0),
  /** The first chained seq; absent when the task has no event written since the chain existed. */
  checkedFrom: z.number().int().min(1).optional(),
  /** The last event's seq and hash, when the chain verified up to it. */
  head: TaskChainHead.optional(),
  checks: z.array(ChainCheck),
  /** The first event that does not match. */
  failure: ChainFailure.optional(),
});
export type TaskChainReport = z.infer<typeof TaskChainReport>;
