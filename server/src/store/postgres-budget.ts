import type pg from 'pg';
import { z } from 'zod';
import { DockhandError } from '../errors';

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

const Granted = z.object({ id: z.number().nullable(), wait_ms: z.number(), limited_by: z.enum(['input_tokens_per_minute', 'requests_per_minute']).nullable() });

/** The limit that was full when a reservation was refused. */
export type BudgetLimitName = 'input_tokens_per_minute' | 'requests_per_minute';

/**
 * The fleet's model rate budget on Postgres: every worker reserves a call's estimated input tokens
 * in `model_spend` before it calls the model, so the sum over the last minute (database clock) stays
 * under the provider's limits for the whole fleet, not per process. A reservation that does not fit
 * is refused with how long until enough of the window has passed; the caller waits that long and
 * asks again — the turn queues instead of meeting a 429. One transaction (one round trip) per ask,
 * serialised by an advisory lock (the check and the insert must not interleave between workers);
 * rows older than the window are deleted as it goes. A call costs two small writes, ~15/s at the design's peak.
 */
export class PostgresModelBudget {
  /** The sliding window the limits count over. */
  readonly windowSeconds = WINDOW_MS / 1000;

  constructor(
    private readonly pool: pg.Pool,
    private readonly lockKey: string,
    readonly limits: BudgetLimits,
  ) {
    for (const field of ['inputTokensPerMinute', 'requestsPerMinute'] as const) {
      const value = limits[field];
      if (value !== undefined && (!Number.isFinite(value) || value <= 0)) {
        throw new DockhandError('bad_request', `rate budget ${field} must be a positive number, not ${value}`, { field, hint: 'leave it unset for no limit' });
      }
    }
  }

  /**
   * Reserves `tokens` now, or says how many ms to wait before asking again. One round trip: the
   * lock, the clean-up and the check-and-insert go as one multi-statement query, which Postgres
   * runs as one implicit transaction (rolled back whole on an error) with a fresh snapshot per
   * statement, so the check sees every reservation committed before the lock was granted. The
   * advisory lock is held only while the server executes them — not across network round trips
   * — which is what lets the whole fleet (300 tasks asking at once) through one lock: with a
   * BEGIN … COMMIT of five round trips the lock queue outgrew the workers' connection pools.
   * Every value is a number checked here, so it is written into the text (a multi-statement
   * query cannot take parameters).
   */
  async tryReserve(tokens: number): Promise<{ reservation: Reservation } | { waitMs: number; limit: BudgetLimitName }> {
    const amount = Math.max(0, Math.round(tokens));
    if (!Number.isSafeInteger(amount)) throw new DockhandError('bad_request', `a rate budget reservation must be a whole number of tokens, not ${tokens}`, { field: 'tokens' });
    // More than the whole minute's budget can never fit: waiting for the window would be forever.
    const whole = this.limits.inputTokensPerMinute;
    if (whole !== undefined && amount > whole) {
      throw new DockhandError('bad_request', `this turn's prompt (about ${amount} input tokens) is larger than the fleet's whole model budget of ${whole} input tokens a minute; it can never be sent`, {
        field: 'modelBudget.inputTokensPerMinute',
        hint: 'raise DOCKHAND_MODEL_BUDGET_TPM (serve --model-tpm) to at least the provider limit, or let the task compact its context',
      });
    }
    const limit = (value: number | undefined) => (value === undefined ? 'NULL::float8' : `${value}::float8`);
    const tpm = limit(this.limits.inputTokensPerMinute);
    const rpm = limit(this.limits.requestsPerMinute);
    if (!/^-?\d+$/.test(this.lockKey)) throw new DockhandError('internal', `rate budget lock key ${this.lockKey} is not an integer`);
    const results: unknown = await this.pool.query(
      `SELECT pg_advisory_xact_lock(${this.lockKey}::bigint);
       DELETE FROM model_spend WHERE at <= ${DB_NOW} - ${WINDOW_MS};
       WITH window_spend AS (
         SELECT COALESCE(SUM(tokens), 0)::float8 AS tokens, COUNT(*)::float8 AS requests, MIN(at) AS oldest FROM model_spend
       ), fits AS (
         SELECT tokens_ok AND (${rpm} IS NULL OR requests + 1 <= ${rpm}) AS ok, tokens_ok, oldest
         FROM window_spend, LATERAL (SELECT ${tpm} IS NULL OR tokens + ${amount} <= ${tpm} AS tokens_ok) AS t
       ), granted AS (
         INSERT INTO model_spend (at, tokens) SELECT ${DB_NOW}, ${amount} FROM fits WHERE ok RETURNING id
       )
       SELECT (SELECT id::float8 FROM granted) AS id,
              (SELECT CASE WHEN ok THEN 0 ELSE GREATEST(oldest + ${WINDOW_MS} - ${DB_NOW}, 50) END FROM fits)::float8 AS wait_ms,
              (SELECT CASE WHEN ok THEN NULL WHEN tokens_ok THEN 'requests_per_minute' ELSE 'input_tokens_per_minute' END FROM fits) AS limited_by`,
    );
    const last = z.array(z.object({ rows: z.array(z.unknown()) })).min(3).parse(results).at(-1);
    const granted = Granted.parse(last?.rows[0]);
    if (granted.id === null) return { waitMs: granted.wait_ms, limit: granted.limited_by ?? 'input_tokens_per_minute' };
    const id = granted.id;
    return { reservation: { id, settle: (actual) => this.settle(id, actual) } };
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
