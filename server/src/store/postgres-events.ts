import type pg from 'pg';
import { z } from 'zod';
import { TaskEvent, type EventType, type NewEvent } from '@dockhand/protocol';
import { DockhandError, fromZodError } from '../errors';
import { currentFence, type LeaseFence } from './lease-fence';
import { addsToUsage, eventSets, project } from './projection';
import { canonicalParts, eventHash, wellFormed } from '../provenance/chain-hash';
import { ChainHeadRow, storedChain, type StoredChain } from './chain-rows';
import { EventRow, ProjectionRow } from './rows';

type Transaction = <T>(work: (client: pg.PoolClient) => Promise<T>) => Promise<T>;

function now(): string {
  return new Date().toISOString();
}

/** Under Postgres's 8000-byte NOTIFY payload limit, with room to spare. */
const NOTICE_MAX_BYTES = 7_900;

const LeaseOfRow = z
  .object({ worker_id: z.string().nullable(), epoch: z.number().nullable(), live: z.boolean().nullable() })
  .transform((row) => (row.worker_id === null || row.epoch === null ? undefined : { worker_id: row.worker_id, epoch: row.epoch, live: row.live ?? false }));

/** The fence's rule (see `assertFence`): this worker's epoch and live, or the write is refused. */
function checkFence(taskId: string, fence: LeaseFence, lease: { worker_id: string; epoch: number; live: boolean } | undefined): void {
  if (lease && lease.worker_id === fence.workerId && lease.epoch === fence.epoch && lease.live) return;
  const now = lease ? (lease.epoch === fence.epoch ? 'has expired' : `is now held by ${lease.worker_id} (epoch ${lease.epoch})`) : 'was released';
  throw new DockhandError('conflict', `lease lost: ${fence.workerId}'s lease on task ${taskId} (epoch ${fence.epoch}) ${now}; the write was refused`, {
    hint: 'the worker that holds the task now carries on from its event log',
  });
}

function toEvent(row: unknown): TaskEvent {
  const r = EventRow.parse(row);
  return TaskEvent.parse({ taskId: r.task_id, seq: r.seq, ts: r.ts, type: r.type, data: JSON.parse(r.data) });
}

/** The NOTIFY channel events are announced on (one per schema, so test schemas stay apart). */
export function eventChannel(schema: string): string {
  return `dockhand_events_${schema}`;
}

/**
 * The channel of events written under a lease's fence (by the worker that holds the task: its
 * model turns, tool calls, tests). Only processes that serve clients (API replicas, `all`) LISTEN
 * here; a worker hears the other channel — what API replicas write (submissions, decisions,
 * messages, cancellations) — and its own writes, so the bulk of a fleet's events does not wake
 * every worker of it.
 */
export function heldEventChannel(schema: string): string {
  return `dockhand_held_${schema}`;
}

/**
 * A fleet's event log in Postgres (the `Store` port's event methods; `PostgresStore` delegates
 * here). A task's row is locked (`SELECT … FOR UPDATE`) while its next seq is assigned, so appends
 * from several processes stay gap-free. Each append also announces `{taskId, seq}` with NOTIFY in
 * the same transaction (sent at commit) on `channel`, or on `heldChannel` when written under a
 * lease fence; `PostgresEventHub` turns those into live events on every process.
 *
 * Writes made inside a lease fence (`lease-fence.ts`) are refused unless the lease still has that
 * worker and epoch: see `assertFence`.
 */
export class PostgresEvents {
  constructor(
    private readonly pool: pg.Pool,
    private readonly transaction: Transaction,
    private readonly channel: string,
    private readonly heldChannel: string,
  ) {}

  async appendEvent(taskId: string, event: NewEvent): Promise<TaskEvent> {
    // One statement needs no transaction around it: one round trip for most events.
    if (!addsToUsage(event.type)) return this.appendOne(this.pool, taskId, event);
    return this.transaction((client) => this.appendIn(client, taskId, event));
  }

  /**
   * Inside a transaction: locks the task's row, checks the fence, assigns the next seq, stores the
   * event, updates the projection and queues the NOTIFY (delivered when the transaction commits).
   * The row lock comes before the lease's (as in a claim), so the two never deadlock.
   */
  async appendIn(client: pg.PoolClient, taskId: string, event: NewEvent): Promise<TaskEvent> {
    if (!addsToUsage(event.type)) return this.appendOne(client, taskId, event);
    // Two statements (named, so each connection plans them once), not five: the hot path of every
    // event. The task's row lock and, under a fence, the lease's share lock come from one query.
    const fence = currentFence(taskId);
    const { rows } = await client.query(
      fence
        ? {
          name: 'dockhand_append_lock_fenced',
          text: `SELECT tasks.last_seq, tasks.usage, tasks.state, tasks.chain_head, lease.worker_id, lease.epoch, lease.live FROM tasks
                 LEFT JOIN LATERAL (
                   SELECT worker_id, epoch::float8 AS epoch, expires_at > (extract(epoch from clock_timestamp()) * 1000)::bigint AS live
                   FROM leases WHERE leases.task_id = tasks.id FOR SHARE
                 ) lease ON true
                 WHERE tasks.id = $1 FOR UPDATE OF tasks`,
          values: [taskId],
        }
        : { name: 'dockhand_append_lock', text: 'SELECT last_seq, usage, state, chain_head FROM tasks WHERE id = $1 FOR UPDATE', values: [taskId] },
    );
    if (rows[0] === undefined) throw new DockhandError('not_found', `task ${taskId} not found`);
    const projection = ProjectionRow.parse(rows[0]);
    if (fence) checkFence(taskId, fence, LeaseOfRow.parse(rows[0]));
    const ts = now();
    const parsed = TaskEvent.safeParse({ taskId, seq: projection.last_seq + 1, ts, type: event.type, data: event.data });
    if (!parsed.success) throw fromZodError(parsed.error, `event ${event.type}`);
    const stored = wellFormed(parsed.data);
    // The head is read under the row lock that also orders the seqs: concurrent appends chain in seq order.
    const hash = eventHash(ChainHeadRow.parse(rows[0]).chain_head ?? '', stored);
    const next = project(projection, stored);
    const notice: { taskId: string; seq: number; type: string; state?: string; held?: true; event?: TaskEvent } = { taskId, seq: stored.seq, type: stored.type };
    if (stored.type === 'task.state') notice.state = stored.data.state;
    // Written under a live lease: the task has a worker, so no other worker need look for work.
    if (fence) notice.held = true;
    // The event rides along when it fits NOTIFY's payload (8000 bytes): replicas publish it without
    // reading it back — one query per event per replica saved. A bigger one is read (`PostgresEventHub`).
    const withEvent = JSON.stringify({ ...notice, event: stored });
    await client.query({
      name: 'dockhand_append_write',
      text: `WITH inserted AS (
               INSERT INTO events (task_id, seq, type, data, ts, hash) VALUES ($1, $2, $3, $4, $5, $12)
             ), updated AS (
               UPDATE tasks SET last_seq = $2, updated_at = $5, state = $6, usage = $7,
                 pr_url = COALESCE($8, pr_url), error = COALESCE($9, error),
                 chain_head = $12, chain_from = COALESCE(chain_from, $2) WHERE id = $1
             )
             SELECT pg_notify($10, $11)`,
      values: [
        taskId, stored.seq, stored.type, JSON.stringify(stored.data), ts, next.state, next.usage, next.prUrl, next.error,
        fence ? this.heldChannel : this.channel, Buffer.byteLength(withEvent) <= NOTICE_MAX_BYTES ? withEvent : JSON.stringify(notice), hash,
      ],
    });
    return stored;
  }

  /**
   * `appendIn` in one statement, for an event whose change to its row does not depend on the row
   * (`eventSets`: every type but `model.turn`): the task's row locked, under a fence the lease's
   * row held and checked, the next seq taken, the event stored, the row updated and the NOTIFY
   * queued — alone (its own transaction: one round trip instead of BEGIN, two statements and
   * COMMIT) or inside the caller's. The seq is the row's, so the notice is sent in pieces that
   * the statement joins around it. Refused writes store nothing: an unknown task is `not_found`,
   * a lost lease the fence's conflict, as on the two-statement path.
   */
  private async appendOne(client: pg.Pool | pg.PoolClient, taskId: string, event: NewEvent): Promise<TaskEvent> {
    const fence = currentFence(taskId);
    const ts = now();
    // Checked before the row is read: the seq (1 here) is the only field the row decides.
    const checked = TaskEvent.safeParse({ taskId, seq: 1, ts, type: event.type, data: event.data });
    if (!checked.success) throw fromZodError(checked.error, `event ${event.type}`);
    const stored = wellFormed(checked.data);
    // The chain's hash is taken in the statement, where the seq is known: sha256 over the head
    // (read under the row lock that orders the seqs) and the canonical event joined around its seq.
    const canonical = canonicalParts(stored);
    const sets = eventSets(stored);
    const rest: Record<string, unknown> = { type: stored.type };
    if (stored.type === 'task.state') rest.state = stored.data.state;
    // Written under a live lease: the task has a worker, so no other worker need look for work.
    if (fence) rest.held = true;
    const inner = (value: object) => JSON.stringify(value).slice(1, -1);
    const head = `{${inner({ taskId })},"seq":`;
    const middle = `,${inner(rest)}`;
    const withEvent = [`${middle},"event":${head}`, `,${inner({ ts, type: stored.type, data: stored.data })}}}`];
    // The event rides along when it fits NOTIFY's payload (seqs up to 12 digits counted).
    const fits = Buffer.byteLength(head + withEvent.join('')) + 24 <= NOTICE_MAX_BYTES;
    const [second, third] = fits ? withEvent : [`${middle}}`, ''];
    const { rows } = await client.query({
      name: fence ? 'dockhand_append_one_fenced' : 'dockhand_append_one',
      text: `WITH task AS (
               SELECT id, last_seq, chain_head FROM tasks WHERE id = $1 FOR UPDATE
             ),
             ${fence
               ? `lease AS (
               SELECT worker_id, epoch::float8 AS epoch, expires_at > (extract(epoch from clock_timestamp()) * 1000)::bigint AS live
               FROM leases WHERE task_id = $1 FOR SHARE
             ),
             allowed AS (
               SELECT task.id, task.last_seq + 1 AS seq, task.chain_head FROM task
               WHERE EXISTS (SELECT 1 FROM lease WHERE worker_id = $14 AND epoch = $15::float8 AND live)
             ),`
               : `allowed AS (SELECT task.id, task.last_seq + 1 AS seq, task.chain_head FROM task),`}
             chained AS (
               SELECT id, seq, encode(sha256(convert_to(COALESCE(chain_head, '') || $12::text || seq::text || $13::text, 'UTF8')), 'hex') AS hash
               FROM allowed
             ),
             inserted AS (
               INSERT INTO events (task_id, seq, type, data, ts, hash) SELECT id, seq, $2, $3, $4, hash FROM chained RETURNING seq
             ),
             updated AS (
               UPDATE tasks SET last_seq = chained.seq, updated_at = $4, state = COALESCE($5, tasks.state),
                 pr_url = COALESCE($6, tasks.pr_url), error = COALESCE($7, tasks.error),
                 chain_head = chained.hash, chain_from = COALESCE(tasks.chain_from, chained.seq)
               FROM chained WHERE tasks.id = chained.id
             ),
             notified AS (
               SELECT pg_notify($8, $9::text || seq::text || $10::text || (CASE WHEN $11::text = '' THEN '' ELSE seq::text || $11::text END)) AS sent FROM inserted
             )
             SELECT (SELECT count(*) FROM task)::int AS found, (SELECT seq FROM inserted)::float8 AS seq, (SELECT count(*) FROM notified)::int AS notified
             ${fence ? ', lease.worker_id, lease.epoch, lease.live FROM (SELECT 1) one LEFT JOIN lease ON true' : ''}`,
      values: [
        taskId, stored.type, JSON.stringify(stored.data), ts, sets.state, sets.prUrl, sets.error,
        fence ? this.heldChannel : this.channel, head, second, third, canonical.before, canonical.after, ...(fence ? [fence.workerId, fence.epoch] : []),
      ],
    });
    const row = z.object({ found: z.number(), seq: z.number().nullable() }).parse(rows[0]);
    if (row.found === 0) throw new DockhandError('not_found', `task ${taskId} not found`);
    if (row.seq === null) {
      if (fence) checkFence(taskId, fence, LeaseOfRow.parse(rows[0]));
      throw new DockhandError('conflict', `task ${taskId}: the event was not stored`);
    }
    return { ...stored, seq: row.seq };
  }

  /**
   * Refuses a write made under a lease fence whose lease has since expired or changed hands. The
   * lease row is held (`FOR SHARE`) until the write commits, so a takeover waits for it: either
   * the write lands before the new epoch exists, or it is refused.
   */
  async assertFence(client: pg.PoolClient, taskId: string): Promise<void> {
    const fence = currentFence(taskId);
    if (!fence) return;
    const { rows } = await client.query(
      `SELECT worker_id, epoch::float8 AS epoch, expires_at > (extract(epoch from clock_timestamp()) * 1000)::bigint AS live
       FROM leases WHERE task_id = $1 FOR SHARE`,
      [taskId],
    );
    checkFence(taskId, fence, z.object({ worker_id: z.string(), epoch: z.number(), live: z.boolean() }).optional().parse(rows[0]));
  }

  async listEvents(taskId: string, after = 0, limit = 1_000_000): Promise<TaskEvent[]> {
    const { rows } = await this.pool.query('SELECT task_id, seq, type, data, ts FROM events WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3', [taskId, after, limit]);
    return rows.map(toEvent);
  }

  async readChain(taskId: string, withEvents = true): Promise<StoredChain | undefined> {
    const task = await this.pool.query('SELECT last_seq, chain_from, chain_head FROM tasks WHERE id = $1', [taskId]);
    if (task.rows[0] === undefined) return undefined;
    const chain = storedChain(taskId, task.rows[0], []);
    if (!withEvents) return chain;
    // Up to the row's last seq: an event appended since the row was read is not part of this reading.
    const events = await this.pool.query('SELECT seq, type, data, ts, hash FROM events WHERE task_id = $1 AND seq <= $2 ORDER BY seq', [taskId, chain.lastSeq]);
    return storedChain(taskId, task.rows[0], events.rows);
  }

  async eventsOfTypes(types: EventType[]): Promise<TaskEvent[]> {
    if (types.length === 0) return [];
    const { rows } = await this.pool.query('SELECT task_id, seq, type, data, ts FROM events WHERE type = ANY($1) ORDER BY task_id COLLATE "C", seq', [types]);
    return rows.map(toEvent);
  }
}
