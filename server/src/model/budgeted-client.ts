import type { ModelClient, ModelTurnRequest, ModelTurnResult } from './types';

/** The fleet-wide budget a turn reserves from before it calls the model (`store/postgres-budget.ts`). */
export interface RateBudget {
  tryReserve(tokens: number): Promise<{ reservation: { settle(tokens: number): Promise<void> } } | { waitMs: number }>;
}

export interface BudgetWait {
  waitedMs: number;
  tokens: number;
}

/**
 * A model client that asks the fleet's rate budget before each turn: the request's input tokens
 * are estimated (a quarter of its JSON length — the provider's count is close to it; 15% is added
 * so an estimate a little short does not overdraw the shared window), reserved, and settled to the
 * provider's own count (input, cache reads and writes) when the turn is done. A turn that does
 * not fit waits for the window to move instead of calling and meeting a 429; `onWait` hears it.
 */
export class BudgetedModelClient implements ModelClient {
  /** Turns that waited for the budget, and for how long in all (metrics, benchmarks). */
  waits = 0;
  waitedMs = 0;

  constructor(
    private readonly inner: ModelClient,
    private readonly budget: RateBudget,
    private readonly onWait?: (wait: BudgetWait) => void,
  ) {}

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
    let waited = false;
    for (;;) {
      request.signal?.throwIfAborted();
      const answer = await this.budget.tryReserve(tokens);
      if ('reservation' in answer) {
        if (waited) {
          const waitedMs = Date.now() - started;
          this.waitedMs += waitedMs;
          this.onWait?.({ waitedMs, tokens });
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
      if (!waited) this.waits += 1;
      waited = true;
      await new Promise((resolve) => setTimeout(resolve, Math.min(answer.waitMs, 2_000)));
    }
  }
}
