import type pg from 'pg';
import type { Logger } from '../log';

/** How long closing waits for the unlock's answer before it ends the connection instead. */
const UNLOCK_TIMEOUT_MS = 5_000;

/**
 * One leader in the fleet for a job that must not run twice at once (the PR outcome poller: two
 * pollers would both record the same merge). Leadership is a session-level Postgres advisory lock
 * held on one connection taken out of the pool for as long as this process leads: when the process
 * dies or its connection is cut, Postgres drops the session and the lock with it, and the next
 * process that asks becomes the leader. No lease of our own, no clock.
 *
 * `isLeader()` is asked before each run of the job: it checks that the held connection still
 * answers (else gives it up) or tries to take the lock. `close()` unlocks before it lets the
 * connection go, so a process that asks once it has resolved becomes the leader: a session's end
 * drops the lock only when the server's backend has finished exiting, which neither ending the
 * client nor `pool.end()` waits for.
 */
export class PostgresLeadership {
  private client: pg.PoolClient | undefined;
  private asking: Promise<boolean> | undefined;
  private closed = false;

  constructor(
    private readonly pool: pg.Pool,
    /** The lock's key: one per job (a 64-bit integer, as text). */
    private readonly key: string,
    private readonly logger?: Logger,
  ) {}

  isLeader(): Promise<boolean> {
    if (this.closed) return Promise.resolve(false);
    this.asking ??= this.ask().finally(() => {
      this.asking = undefined;
    });
    return this.asking;
  }

  private async ask(): Promise<boolean> {
    if (this.closed) return false;
    if (this.client) {
      try {
        await this.client.query('SELECT 1');
        return true;
      } catch (error) {
        this.logger?.warn({ err: error, key: this.key }, 'lost the connection that held leadership');
        this.drop(error);
        return false;
      }
    }
    const client = await this.pool.connect();
    // A connection error on the checked-out client (while asking, or later, idle and holding the
    // lock) must not crash the process: it ends leadership, or fails the ask.
    const onError = (error: Error) => {
      if (this.client === client) this.drop(error);
    };
    client.on('error', onError);
    try {
      const { rows } = await client.query('SELECT pg_try_advisory_lock($1::bigint) AS held', [this.key]);
      if (rows[0]?.held === true) {
        this.client = client;
        this.logger?.info({ key: this.key }, 'leading the fleet-wide job');
        return true;
      }
      client.removeListener('error', onError);
      client.release();
      return false;
    } catch (error) {
      client.removeListener('error', onError);
      client.release(error instanceof Error ? error : true);
      throw error;
    }
  }

  private drop(error: unknown): void {
    const client = this.client;
    this.client = undefined;
    // Destroyed rather than returned to the pool: its session (and any lock) must end.
    client?.release(error instanceof Error ? error : true);
  }

  /** Gives leadership up: when this resolves, the lock is free and another process may take it. */
  async close(): Promise<void> {
    this.closed = true;
    // An ask in flight may still take the lock (and keep a pooled connection checked out, which
    // `pool.end()` would wait for forever): let it land, then give up what it took.
    await this.asking?.catch(() => undefined);
    const client = this.client;
    if (!client) return;
    this.client = undefined;
    const unlocking = client.query('SELECT pg_advisory_unlock($1::bigint)', [this.key]);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer to the unlock within ${UNLOCK_TIMEOUT_MS} ms`)), UNLOCK_TIMEOUT_MS);
    });
    try {
      await Promise.race([unlocking, timeout]);
      client.release(true);
    } catch (error) {
      // The connection cannot unlock: ending it is all that is left (the lock goes with its session).
      unlocking.catch(() => undefined);
      this.logger?.warn({ err: error, key: this.key }, 'could not unlock leadership; ending its connection');
      client.release(error instanceof Error ? error : true);
    } finally {
      clearTimeout(timer);
    }
  }
}
