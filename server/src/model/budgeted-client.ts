import { DockhandError } from '../errors';
import { RetryPolicy, retriesExhausted, retryDelayMs, type RetryPolicyInput } from './retry';
import type { BudgetWaitNotice, ModelClient, ModelTurnRequest, ModelTurnResult } from './types';

/** The fleet-wide budget a turn reserves from before it calls the model (`store/postgres-budget.ts`). */
export interface RateBudget {
  tryReserve(tokens: number): Promise<{ reservation: { settle(tokens: number): Promise<void> } } | { waitMs: number; limit?: BudgetWaitNotice['limit'] }>;
  /** The sliding window the limits count over (default 60). */
  readonly windowSeconds?: number;
}

export interface BudgetWait {
  waitedMs: number;
  tokens: number;
  limit: BudgetWaitNotice['limit'];
}

/**
 * A model client that asks the fleet's rate budget before each turn: the request's input tokens
 * are estimated (a quarter of its JSON length — the provider's count is close to it; 15% is added
 * so an estimate a little short does not overdraw the shared window), reserved, and settled to the
 * provider's own count (input, cache reads and writes) when the turn is done. A turn that does
 * not fit waits for the window to move instead of calling and meeting a 429: `onBudgetWait` hears
 * when it starts waiting (which limit is full, the window, the estimated wait) and when it goes
 * ahead (how long it waited) — the agent loop writes both as `model.budget_wait` events under the
 * task's lease fence — and `onWait` (benchmarks) hears each finished wait.
 *
 * A budget that cannot be asked (its store unreachable, its pool out of connections) is retried
 * like an unreachable model — backoff with jitter, each retry told to `onRetry` — and after the
 * policy's attempts the task is handed back to the queue (`hand-back.ts`), or, with no scheduler
 * to take it, the turn fails with `model_unavailable`.
 */
export class BudgetedModelClient implements ModelClient {
  /** Turns that waited for the budget, and for how long in all (metrics, benchmarks). */
  waits = 0;
  waitedMs = 0;

  onBudgetWait?: (notice: BudgetWaitNotice) => void;

  private readonly policy: RetryPolicy;

  constructor(
    private readonly inner: ModelClient,
    private readonly budget: RateBudget,
    private readonly onWait?: (wait: BudgetWait) => void,
    private readonly options: { retry?: RetryPolicyInput; sleep?: (ms: number) => Promise<void>; random?: () => number } = {},
  ) {
    this.policy = RetryPolicy.parse(options.retry ?? {});
  }

  get onFallback() {
    return this.inner.onFallback;
  }

  set onFallback(listener) {
    this.inner.onFallback = listener;
  }

  get onRetry() {
    return this.inner.onRetry;
  }

  set onRetry(listener) {
    this.inner.onRetry = listener;
  }

  async turn(request: ModelTurnRequest): Promise<ModelTurnResult> {
    const tokens = Math.ceil((JSON.stringify({ system: request.system, tools: request.tools, messages: request.messages }).length / 4) * 1.15);
    const started = Date.now();
    const windowSeconds = this.budget.windowSeconds ?? 60;
    let limit: BudgetWaitNotice['limit'] | undefined;
    for (;;) {
      request.signal?.throwIfAborted();
      const answer = await this.reserve(tokens, request.signal);
      if ('reservation' in answer) {
        if (limit !== undefined) {
          const waitedMs = Date.now() - started;
          this.waitedMs += waitedMs;
          this.onBudgetWait?.({ phase: 'done', limit, windowSeconds, tokens, waitMs: waitedMs });
          this.onWait?.({ waitedMs, tokens, limit });
        }
        try {
          const result = await this.inner.turn(request);
          const usage = result.message.usage;
          await answer.reservation.settle(usage.input_tokens + (usage.cache_read_input_tokens ?? 0) + (usage.cache_creation_input_tokens ?? 0)).catch(() => undefined);
          return result;
        } catch (error) {
          // Refused or failed before the provider counted it: the tokens go back to the fleet.
          await answer.reservation.settle(0).catch(() => undefined);
          throw error;
        }
      }
      if (limit === undefined) {
        this.waits += 1;
        limit = answer.limit ?? 'input_tokens_per_minute';
        this.onBudgetWait?.({ phase: 'waiting', limit, windowSeconds, tokens, waitMs: answer.waitMs });
      }
      await abortableSleep(Math.min(answer.waitMs, 2_000), request.signal);
    }
  }

  /** One ask of the budget, retried while the budget's store cannot be reached. */
  private async reserve(tokens: number, signal: AbortSignal | undefined): ReturnType<RateBudget['tryReserve']> {
    const random = this.options.random ?? Math.random;
    const pause = this.options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.budget.tryReserve(tokens);
      } catch (error) {
        signal?.throwIfAborted();
        if (error instanceof DockhandError && error.code === 'bad_request') throw error;
        const message = error instanceof Error ? error.message : String(error);
        const reason = `rate budget unreachable: ${message}`;
        const failure = { retryable: true, aborted: false, reason, retryAfterMs: undefined };
        if (attempt >= this.policy.maxAttempts) {
          throw retriesExhausted({
            policy: this.policy,
            random,
            subject: 'rate budget',
            model: 'rate budget',
            reason: message,
            onRetry: this.onRetry,
            cause: error,
            hint: 'the fleet rate budget lives in the Postgres store: check that the store is up and the pool (DOCKHAND_DATABASE_URL) is not exhausted',
          });
        }
        const delayMs = retryDelayMs(attempt, this.policy, failure, random);
        this.onRetry?.({ attempt, of: this.policy.maxAttempts, model: 'rate budget', reason, delayMs });
        await pause(delayMs);
        signal?.throwIfAborted();
      }
    }
  }
}

/** A pause that ends early (rejecting) when the turn is aborted: a cancelled task does not sit out the window. */
function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
