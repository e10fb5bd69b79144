import type pg from 'pg';
import { z } from 'zod';
import { ACTIVE_STATES, TaskState as TaskStateSchema, type Task, type TaskState } from '@dockhand/protocol';
import { DockhandError } from '../errors';
import { currentFence } from './lease-fence';
import { toTask } from './rows';
import type { Claim, FencedLease } from './queue';

const RUNNABLE_STATES = ['queued', ...ACTIVE_STATES];
/** Milliseconds since the epoch on the database's clock: one clock for the whole fleet. */
const DB_NOW = '(extract(epoch from clock_timestamp()) * 1000)::bigint';
/** `$n` or, when the caller passes no time (production), the database's clock. */
const clock = (param: string) => `COALESCE(${param}::bigint, ${DB_NOW})`;
const PRIORITY_RANK = `(CASE tasks.priority WHEN 'normal' THEN 0 ELSE 1 END)`;

const LeaseRow = z.object({ task_id: z.string(), worker_id: z.string(), expires_at: z.number(), epoch: z.number() });

/**
 * The task queue on Postgres: the `tasks` table is the queue (its state says what is runnable) and
 * `leases` says who works on what until when. A claim is one statement: pick the runnable tasks
 * without a live lease, normal priority before routine and oldest first, lock their rows with
 * `FOR UPDATE SKIP LOCKED` (so concurrent claimers take different tasks instead of waiting for
 * each other) and write a lease with a fresh epoch for each. An expired lease — a worker that died
 * or was cut off — is claimable like no lease at all, which is how a task is resumed elsewhere.
 */
export class PostgresQueue {
  constructor(private readonly pool: pg.Pool) {}

  /** `client`: inside the caller's transaction (the claimed rows stay locked until it commits). */
  async claim(workerId: string, limit: number, ttlMs: number, options: { exclude?: string[]; now?: number; client?: pg.PoolClient } = {}): Promise<Claim[]> {
    if (limit <= 0) return [];
    const { rows } = await (options.client ?? this.pool).query(
      `WITH clock AS (SELECT ${clock('$5')} AS now),
       candidates AS (
         SELECT tasks.id FROM tasks
         LEFT JOIN leases ON leases.task_id = tasks.id
         WHERE tasks.state = ANY($1) AND NOT (tasks.id = ANY($4))
           AND (leases.task_id IS NULL OR leases.expires_at <= (SELECT now FROM clock))
         ORDER BY ${PRIORITY_RANK}, tasks.num
         LIMIT $3
         FOR UPDATE OF tasks SKIP LOCKED
       ),
       claimed AS (
         INSERT INTO leases (task_id, worker_id, expires_at, epoch)
         SELECT id, $2, (SELECT now FROM clock) + $6, nextval('lease_epochs') FROM candidates
         ON CONFLICT (task_id) DO UPDATE SET worker_id = excluded.worker_id, expires_at = excluded.expires_at, epoch = excluded.epoch
           WHERE leases.expires_at <= (SELECT now FROM clock)
         RETURNING task_id, epoch::float8 AS epoch, expires_at::float8 AS expires_at
       )
       SELECT tasks.*, claimed.epoch AS lease_epoch, claimed.expires_at AS lease_expires_at
       FROM claimed JOIN tasks ON tasks.id = claimed.task_id
       ORDER BY ${PRIORITY_RANK}, tasks.num`,
      [RUNNABLE_STATES, workerId, limit, options.exclude ?? [], options.now ?? null, ttlMs],
    );
    return rows.map((row: unknown) => {
      const lease = z.object({ lease_epoch: z.number(), lease_expires_at: z.number() }).parse(row);
      return { task: toTask(row), epoch: lease.lease_epoch, expiresAt: lease.lease_expires_at };
    });
  }

  /**
   * The `Store` port's acquire (SQLite's semantics): free or expired → taken, with a new epoch;
   * already held by this worker → extended, same epoch while it is live.
   */
  async acquire(taskId: string, workerId: string, ttlMs: number, at?: number): Promise<boolean> {
    const result = await this.pool.query(
      `WITH clock AS (SELECT ${clock('$4')} AS now)
       INSERT INTO leases (task_id, worker_id, expires_at, epoch)
       VALUES ($1, $2, (SELECT now FROM clock) + $3, nextval('lease_epochs'))
       ON CONFLICT (task_id) DO UPDATE SET worker_id = excluded.worker_id, expires_at = excluded.expires_at,
         epoch = CASE WHEN leases.worker_id = excluded.worker_id AND leases.expires_at > (SELECT now FROM clock) THEN leases.epoch ELSE excluded.epoch END
       WHERE leases.expires_at <= (SELECT now FROM clock) OR leases.worker_id = excluded.worker_id`,
      [taskId, workerId, ttlMs, at ?? null],
    );
    return result.rowCount === 1;
  }

  /** The heartbeat. Under a fence only the fenced epoch is extended. */
  async renew(taskId: string, workerId: string, ttlMs: number, at?: number): Promise<boolean> {
    const fence = currentFence(taskId);
    const result = await this.pool.query(
      `UPDATE leases SET expires_at = ${clock('$4')} + $3
       WHERE task_id = $1 AND worker_id = $2 AND ($5::bigint IS NULL OR epoch = $5::bigint)`,
      [taskId, workerId, ttlMs, at ?? null, fence?.workerId === workerId ? fence.epoch : null],
    );
    return result.rowCount === 1;
  }

  /** `renew`, returning the task's state from the same statement (one round trip a heartbeat). */
  async renewWithState(taskId: string, workerId: string, ttlMs: number): Promise<{ renewed: boolean; state?: TaskState }> {
    const fence = currentFence(taskId);
    const { rows } = await this.pool.query(
      `UPDATE leases SET expires_at = ${DB_NOW} + $3
       WHERE task_id = $1 AND worker_id = $2 AND ($4::bigint IS NULL OR epoch = $4::bigint)
       RETURNING (SELECT state FROM tasks WHERE tasks.id = leases.task_id) AS state`,
      [taskId, workerId, ttlMs, fence?.workerId === workerId ? fence.epoch : null],
    );
    if (rows[0] === undefined) return { renewed: false };
    const { state } = z.object({ state: TaskStateSchema.nullable() }).parse(rows[0]);
    return state === null ? { renewed: true } : { renewed: true, state };
  }

  /**
   * Before an irreversible step (the push) under a fence: the lease is still this epoch's and live,
   * and now lasts `ttlMs` more. Refused (conflict) otherwise — the task may be someone else's.
   */
  async confirm(taskId: string, ttlMs: number): Promise<void> {
    const fence = currentFence(taskId);
    if (!fence) return;
    const result = await this.pool.query(
      `UPDATE leases SET expires_at = ${DB_NOW} + $3
       WHERE task_id = $1 AND worker_id = $2 AND epoch = $4 AND expires_at > ${DB_NOW}`,
      [taskId, fence.workerId, ttlMs, fence.epoch],
    );
    if (result.rowCount !== 1) {
      throw new DockhandError('conflict', `lease lost: ${fence.workerId}'s lease on task ${taskId} (epoch ${fence.epoch}) is no longer live; not pushing`, {
        hint: 'the worker that holds the task now pushes it (the push is idempotent)',
      });
    }
  }

  async release(taskId: string, workerId: string): Promise<void> {
    const fence = currentFence(taskId);
    await this.pool.query('DELETE FROM leases WHERE task_id = $1 AND worker_id = $2 AND ($3::bigint IS NULL OR epoch = $3::bigint)', [
      taskId,
      workerId,
      fence?.workerId === workerId ? fence.epoch : null,
    ]);
  }

  async get(taskId: string): Promise<FencedLease | undefined> {
    const { rows } = await this.pool.query('SELECT task_id, worker_id, expires_at::float8 AS expires_at, epoch::float8 AS epoch FROM leases WHERE task_id = $1', [taskId]);
    if (rows[0] === undefined) return undefined;
    const r = LeaseRow.parse(rows[0]);
    return { taskId: r.task_id, workerId: r.worker_id, expiresAt: r.expires_at, epoch: r.epoch };
  }

  async listRunnable(limit: number, at?: number): Promise<Task[]> {
    const { rows } = await this.pool.query(
      `SELECT tasks.* FROM tasks LEFT JOIN leases ON leases.task_id = tasks.id AND leases.expires_at > ${clock('$1')}
       WHERE leases.task_id IS NULL AND tasks.state = ANY($2)
       ORDER BY ${PRIORITY_RANK}, tasks.num LIMIT $3`,
      [at ?? null, RUNNABLE_STATES, limit],
    );
    return rows.map(toTask);
  }
}
