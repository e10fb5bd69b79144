import { z } from 'zod';

/*
 * The rows of a task's hash chain (migration 9), as both stores read them for the verifier
 * (`provenance/chain.ts`). The data stays the text the store holds: the verifier hashes what is
 * stored, not what a schema would make of it.
 */

export interface StoredChainEvent {
  seq: number;
  type: string;
  ts: string;
  /** The JSON text of the event's data, as stored. */
  data: string;
  /** NULL for an event written before the chain existed (or whose hash was removed). */
  hash: string | null;
}

export interface StoredChain {
  taskId: string;
  /** The task row's last seq: the log should end there. */
  lastSeq: number;
  /** The seq of the task's first chained event; NULL when no event was written since the upgrade. */
  chainFrom: number | null;
  /** The task row's copy of the last event's hash. */
  chainHead: string | null;
  /** Every stored event of the task, in seq order. */
  events: StoredChainEvent[];
}

export const ChainHeadRow = z.object({ chain_head: z.string().nullable() });

const ChainTaskRow = z.object({ last_seq: z.number().int(), chain_from: z.number().int().nullable(), chain_head: z.string().nullable() });
const ChainEventRow = z.object({ seq: z.number().int(), type: z.string(), data: z.string(), ts: z.string(), hash: z.string().nullable() });

export function storedChain(taskId: string, task: unknown, events: unknown[]): StoredChain {
  const row = ChainTaskRow.parse(task);
  return { taskId, lastSeq: row.last_seq, chainFrom: row.chain_from, chainHead: row.chain_head, events: events.map((event) => ChainEventRow.parse(event)) };
}
