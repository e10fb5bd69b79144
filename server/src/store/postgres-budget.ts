import type pg from 'pg';
import { z } from 'zod';

const DB_NOW = '(extract(epoch from clock_timestamp()) * 1000)::bigint';
const WINDOW_MS = 60_000;

export interface BudgetLimits {
  /** Input tokens per sliding minute, fleet-wide (set it a little under the provider's). */
  inputTokensPerMinute?: number;
  requestsPerMinute?: number;
}

/** A granted reservation; `settle` replaces the estimate with what the provider counted. */
export interface Reservation {
  id: number;
  settle(tokens: number): Promise<void>;
}

const Granted = z.object({ id: z.number().nullable(), wait_ms: z.number() });

/**
 * The fleet's model rate budget on Postgres: every worker reserves a call's estimated input tokens
 * in `model_spend` before it calls the model, so the sum over the last minute (database clock) stays
 * under the provider's limits for the whole fleet, not per process. A reservation that does not fit
 * is refused with how long until enough of the window has passed; the caller waits that long and
 * asks again — the turn queues instead of meeting a 429. One transaction per ask, serialised by an
 * advisory lock (the check and the insert must not interleave between workers); rows older than
 * the window are deleted as it goes. A call costs two small writes, ~15/s at the design's peak.
 */
export class PostgresModelBudget {
  constructor(
    private readonly pool: pg.Pool,
    private readonly lockKey: string,
    readonly limits: BudgetLimits,
  ) {}

  /** Reserves `tokens` now, or says how many ms to wait before asking again. */
  async tryReserve(tokens: number): Promise<{ reservation: Reservation } | { waitMs: number }> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [this.lockKey]);
      await client.query(`DELETE FROM model_spend WHERE at <= ${DB_NOW} - ${WINDOW_MS}`);
      const { rows } = await client.query(
        `WITH window_spend AS (
           SELECT COALESCE(SUM(tokens), 0)::float8 AS tokens, COUNT(*)::float8 AS requests, MIN(at) AS oldest FROM model_spend
         ), fits AS (
           SELECT ($2::float8 IS NULL OR tokens + $1 <= $2) AND ($3::float8 IS NULL OR requests + 1 <= $3) AS ok, oldest FROM window_spend
         ), granted AS (
           INSERT INTO model_spend (at, tokens) SELECT ${DB_NOW}, $1 FROM fits WHERE ok RETURNING id
         )
         SELECT (SELECT id::float8 FROM granted) AS id,
                (SELECT CASE WHEN ok THEN 0 ELSE GREATEST(oldest + ${WINDOW_MS} - ${DB_NOW}, 50) END FROM fits)::float8 AS wait_ms`,
        [tokens, this.limits.inputTokensPerMinute ?? null, this.limits.requestsPerMinute ?? null],
      );
      await client.query('COMMIT');
      const granted = Granted.parse(rows[0]);
      if (granted.id === null) return { waitMs: granted.wait_ms };
      const id = granted.id;
      return { reservation: { id, settle: (actual) => this.settle(id, actual) } };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  private async settle(id: number, tokens: number): Promise<void> {
    await this.pool.query('UPDATE model_spend SET tokens = $2 WHERE id = $1', [id, Math.max(0, Math.round(tokens))]);
  }

  /** Input tokens and requests in the current window (metrics). */
  async usage(): Promise<{ tokens: number; requests: number }> {
    const { rows } = await this.pool.query(`SELECT COALESCE(SUM(tokens), 0)::float8 AS tokens, COUNT(*)::float8 AS requests FROM model_spend WHERE at > ${DB_NOW} - ${WINDOW_MS}`);
    return z.object({ tokens: z.number(), requests: z.number() }).parse(rows[0]);
  }
}
