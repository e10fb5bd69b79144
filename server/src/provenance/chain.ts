import type { ChainCheck, ChainFailure, TaskChainHead, TaskChainReport } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import type { StoredChain, StoredChainEvent } from '../store/chain-rows';
import type { Store } from '../store/types';
import { canonicalParts, hashOfParts, type ChainedFields } from './chain-hash';

/*
 * Recomputes a task's hash chain from the rows the store holds (`chain-hash.ts` says how each hash
 * is made) and names the first event that does not match. What this proves: no event was edited,
 * removed or moved since it was written, unless whoever did it also rewrote every later hash and
 * the task row's head. It does not prove more on its own: the attestation of a push signs the
 * head (`chainHead`), and that signature is what a rewrite of the whole tail cannot forge.
 */

type ChainReader = Pick<Store, 'readChain'>;

/** The head of the task's chain as its row records it: what an attestation signs. Undefined: no chained event yet. */
export async function chainHead(store: ChainReader, taskId: string): Promise<TaskChainHead | undefined> {
  const chain = await store.readChain(taskId, false);
  if (!chain) throw new DockhandError('not_found', `task ${taskId} not found`);
  if (chain.chainHead === null || chain.lastSeq < 1) return undefined;
  return { seq: chain.lastSeq, hash: chain.chainHead };
}

export async function verifyTaskChain(store: ChainReader, taskId: string): Promise<TaskChainReport> {
  const chain = await store.readChain(taskId);
  if (!chain) throw new DockhandError('not_found', `task ${taskId} not found`);
  return verifyChain(chain);
}

/** The event's stored fields as they were hashed; a data column that is no longer JSON cannot match. */
function fieldsOf(taskId: string, event: StoredChainEvent): Omit<ChainedFields, 'seq'> | undefined {
  try {
    return { taskId, type: event.type, ts: event.ts, data: JSON.parse(event.data) };
  } catch {
    return undefined;
  }
}

/** How many rows the search for a moved row looks through (it hashes one event up to 8 times per row). */
const REORDER_SEARCH_LIMIT = 20_000;

/**
 * A row whose hash does not match where it is: was it written at another seq, after another row
 * of this task? Looks for a seq near its own, or right after any row, whose hash with that row's
 * as the previous one gives its stored hash. Found: the row is intact, only moved.
 */
function writtenAt(chain: StoredChain, event: StoredChainEvent, fields: Omit<ChainedFields, 'seq'>): { seq: number; after: number } | undefined {
  if (event.hash === null || chain.events.length > REORDER_SEARCH_LIMIT) return undefined;
  const parts = canonicalParts(fields);
  const near = [-3, -2, -1, 1, 2, 3].map((offset) => event.seq + offset).filter((seq) => seq >= 1);
  const previous: Array<{ seq: number; hash: string }> = [{ seq: 0, hash: '' }];
  for (const row of chain.events) if (row.hash !== null && row !== event) previous.push({ seq: row.seq, hash: row.hash });
  for (const candidate of previous) {
    for (const seq of new Set([candidate.seq + 1, ...near])) {
      if (seq === event.seq && candidate.seq === event.seq - 1) continue;
      if (hashOfParts(candidate.hash, parts, seq) === event.hash) return { seq, after: candidate.seq };
    }
  }
  return undefined;
}

/** `verifyTaskChain` on rows already read (pure). */
export function verifyChain(chain: StoredChain): TaskChainReport {
  // Where the chain starts: the task row says (its first event after the upgrade); a hashed event
  // before that would mean the row was changed to hide edits behind "predates the chain".
  const firstHashed = chain.events.find((event) => event.hash !== null);
  const start = chain.chainFrom ?? firstHashed?.seq;
  const checks: ChainCheck[] = [];
  const report = (failure?: ChainFailure, head?: TaskChainHead): TaskChainReport => ({
    taskId: chain.taskId,
    ok: failure === undefined,
    lastSeq: chain.lastSeq,
    unchainedThrough: start === undefined ? chain.lastSeq : start - 1,
    ...(start === undefined ? {} : { checkedFrom: start }),
    ...(head ? { head } : {}),
    checks,
    ...(failure ? { failure } : {}),
  });
  const fail = (name: ChainCheck['name'], failure: ChainFailure): TaskChainReport => {
    checks.push({ name, ok: false, detail: `seq ${failure.seq}${failure.type ? ` (${failure.type})` : ''}: ${failure.kind.replace('_', ' ')}: ${failure.detail}` });
    return report(failure);
  };

  if (start !== undefined && firstHashed !== undefined && firstHashed.seq < start) {
    return fail('chain start', { seq: firstHashed.seq, type: firstHashed.type, kind: 'hash_mismatch', detail: `it has a hash, but the task records its chain as starting at seq ${start}` });
  }
  checks.push({
    name: 'chain start',
    ok: true,
    detail: start === undefined
      ? `no event of this task was written since the hash chain exists: events 1–${chain.lastSeq} predate the chain; nothing to check beyond their seqs`
      : start > 1 ? `events 1–${start - 1} predate the chain; checked from ${start}` : 'chained from its first event',
  });

  let previous = '';
  let expected = 1;
  let last: StoredChainEvent | undefined;
  for (const event of chain.events) {
    if (event.seq > chain.lastSeq) {
      return fail('sequence', { seq: event.seq, type: event.type, kind: 'extra', detail: `the task's last seq is ${chain.lastSeq}: nothing wrote this row through the store` });
    }
    if (event.seq !== expected) {
      return fail('sequence', { seq: expected, kind: 'missing', detail: expected === event.seq - 1 ? `no row (the log goes from seq ${expected - 1} to ${event.seq})` : `no rows for seqs ${expected}–${event.seq - 1}` });
    }
    expected = event.seq + 1;
    last = event;
    if (start === undefined || event.seq < start) continue;
    if (event.hash === null) {
      return fail('links', { seq: event.seq, type: event.type, kind: 'missing', detail: `its hash is missing (the chain starts at seq ${start})` });
    }
    const fields = fieldsOf(chain.taskId, event);
    if (!fields) return fail('links', { seq: event.seq, type: event.type, kind: 'hash_mismatch', detail: 'its data is no longer JSON' });
    const recomputed = hashOfParts(previous, canonicalParts(fields), event.seq);
    if (recomputed !== event.hash) {
      const moved = writtenAt(chain, event, fields);
      if (moved) {
        return fail('links', { seq: event.seq, type: event.type, kind: 'reordered', detail: `the row is intact but was written as seq ${moved.seq}${moved.after > 0 ? `, after the event now at seq ${moved.after}` : ', first of the chain'}` });
      }
      return fail('links', { seq: event.seq, type: event.type, kind: 'hash_mismatch', detail: `stored hash ${event.hash.slice(0, 16)}… but its stored fields (and the previous hash) give ${recomputed.slice(0, 16)}…: the row was changed after it was written` });
    }
    previous = event.hash;
  }
  if (expected - 1 < chain.lastSeq) {
    return fail('sequence', { seq: expected, kind: 'missing', detail: `the log ends at seq ${expected - 1} but the task's last seq is ${chain.lastSeq}` });
  }
  checks.push({ name: 'sequence', ok: true, detail: chain.lastSeq === 0 ? 'no events' : `seqs 1–${chain.lastSeq}, none missing` });
  if (start === undefined || last === undefined) return report();
  checks.push({ name: 'links', ok: true, detail: `seqs ${start}–${last.seq}: every hash recomputed from the stored fields and the previous hash` });
  if (chain.chainHead !== previous) {
    return fail('head', { seq: last.seq, type: last.type, kind: 'hash_mismatch', detail: `the task records its chain's head as ${chain.chainHead?.slice(0, 16) ?? 'nothing'}…, the log ends at ${previous.slice(0, 16)}…` });
  }
  checks.push({ name: 'head', ok: true, detail: `seq ${last.seq} ${previous}: the task's recorded head` });
  return report(undefined, { seq: last.seq, hash: previous });
}
