import type { ModelClient, ModelTurnRequest, ModelTurnResult } from './types';

/**
 * A model client made on the first turn, for a choice that needs a read first — cost routing reads
 * the repository's `.dockhand/policy.yml` at the task's base to pick a routine task's model — while
 * callers get a client at once. The listeners the agent loop sets (`onRetry`, `onFallback`,
 * `onBudgetWait`) are handed to the real client before each turn. A failed `make` fails the turn,
 * and the next turn tries again.
 */
export class DeferredModelClient implements ModelClient {
  onFallback?: ModelClient['onFallback'];
  onRetry?: ModelClient['onRetry'];
  onBudgetWait?: ModelClient['onBudgetWait'];
  private client: Promise<ModelClient> | undefined;

  constructor(private readonly make: () => Promise<ModelClient>) {}

  async turn(request: ModelTurnRequest): Promise<ModelTurnResult> {
    this.client ??= this.make();
    let inner: ModelClient;
    try {
      inner = await this.client;
    } catch (error) {
      this.client = undefined;
      throw error;
    }
    inner.onFallback = this.onFallback;
    inner.onRetry = this.onRetry;
    inner.onBudgetWait = this.onBudgetWait;
    return inner.turn(request);
  }
}
