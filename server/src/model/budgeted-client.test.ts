import { describe, expect, it } from 'vitest';
import { DockhandError } from '../errors';
import { withHandBack, type HandBackRequest } from '../scheduler/hand-back';
import { BudgetedModelClient, type RateBudget } from './budgeted-client';
import type { BudgetWaitNotice, ModelClient, ModelTurnRequest, RetryNotice } from './types';

const request: ModelTurnRequest = { system: [], tools: [], messages: [{ role: 'user', content: 'hi' }] };

function answering(): ModelClient & { calls: number } {
  return {
    calls: 0,
    async turn() {
      this.calls += 1;
      const usage = { input_tokens: 10, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cache_creation: null, server_tool_use: null, service_tier: null };
      return { model: 'm', costUsd: 0, message: { id: 'x', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: 'end_turn', stop_sequence: null, usage } } as never;
    },
  };
}

/** A budget whose store fails the first `failures` asks the way pg-pool does when no connection frees up. */
function flakyBudget(failures: number): RateBudget & { asks: number; settled: number[] } {
  return {
    asks: 0,
    settled: [],
    async tryReserve() {
      this.asks += 1;
      if (this.asks <= failures) throw new Error('timeout exceeded when trying to connect');
      return { reservation: { settle: async (tokens: number) => void this.settled.push(tokens) } };
    },
  };
}

function client(inner: ModelClient, budget: RateBudget, retries: RetryNotice[], sleeps: number[]) {
  const budgeted = new BudgetedModelClient(inner, budget, undefined, {
    retry: { maxAttempts: 3, baseDelayMs: 100, jitter: 0, handBackDelayMs: 5_000 },
    sleep: async (ms) => void sleeps.push(ms),
    random: () => 0,
  });
  budgeted.onRetry = (notice) => retries.push(notice);
  return budgeted;
}

describe('BudgetedModelClient when the budget cannot be asked', () => {
  it('retries the ask with backoff, telling onRetry, and then calls the model', async () => {
    const inner = answering();
    const budget = flakyBudget(2);
    const retries: RetryNotice[] = [];
    const sleeps: number[] = [];
    await client(inner, budget, retries, sleeps).turn(request);
    expect(sleeps).toEqual([100, 200]);
    expect(retries.map((notice) => [notice.attempt, notice.model, notice.reason])).toEqual([
      [1, 'rate budget', 'rate budget unreachable: timeout exceeded when trying to connect'],
      [2, 'rate budget', 'rate budget unreachable: timeout exceeded when trying to connect'],
    ]);
    expect(inner.calls).toBe(1);
    expect(budget.settled).toEqual([10]);
  });

  it('after the attempts: hands the task back under a scheduler, and fails model_unavailable without one', async () => {
    const retries: RetryNotice[] = [];
    const handedBack: HandBackRequest[] = [];
    const inner = answering();
    const under = await withHandBack((request) => handedBack.push(request), () => client(inner, flakyBudget(99), retries, []).turn(request)).catch((error: unknown) => error);
    expect(under instanceof DockhandError ? under.code : undefined).toBe('model_unavailable');
    expect(handedBack).toEqual([{ reason: 'rate budget unreachable after 3 attempts: timeout exceeded when trying to connect', delayMs: 5_000 }]);
    expect(retries.at(-1)).toMatchObject({ handBack: true, delayMs: 5_000, attempt: 3, of: 3 });
    expect(inner.calls).toBe(0);

    const alone: RetryNotice[] = [];
    const error = await client(inner, flakyBudget(99), alone, []).turn(request).catch((caught: unknown) => caught);
    expect(String(error)).toContain('rate budget unreachable');
    expect(alone.some((notice) => notice.handBack)).toBe(false);
  });
});

describe('BudgetedModelClient when the budget is full', () => {
  /** A budget whose window is full for its first `refusals` asks (the requests-per-minute limit). */
  function fullBudget(refusals: number): RateBudget & { asks: number } {
    return {
      asks: 0,
      windowSeconds: 60,
      async tryReserve() {
        this.asks += 1;
        if (this.asks <= refusals) return { waitMs: 30, limit: 'requests_per_minute' as const };
        return { reservation: { settle: async () => undefined } };
      },
    };
  }

  it('tells onBudgetWait when the turn starts waiting (limit, window, estimate) and when it goes ahead (how long), once per turn', async () => {
    const inner = answering();
    const finished: number[] = [];
    const budgeted = new BudgetedModelClient(inner, fullBudget(3), (wait) => finished.push(wait.waitedMs));
    const notices: BudgetWaitNotice[] = [];
    budgeted.onBudgetWait = (notice) => notices.push(notice);
    await budgeted.turn(request);
    expect(notices.map((notice) => [notice.phase, notice.limit, notice.windowSeconds])).toEqual([
      ['waiting', 'requests_per_minute', 60],
      ['done', 'requests_per_minute', 60],
    ]);
    expect(notices[0]?.waitMs).toBe(30);
    expect(notices[1]?.waitMs).toBeGreaterThanOrEqual(85);
    expect(notices[0]?.tokens).toBeGreaterThan(0);
    expect(finished).toEqual([notices[1]?.waitMs]);
    expect([budgeted.waits, inner.calls]).toEqual([1, 1]);

    notices.length = 0;
    await new BudgetedModelClient(inner, fullBudget(0)).turn(request);
    expect(notices).toEqual([]);
  });

  it('a cancelled turn stops waiting at once', async () => {
    const budget: RateBudget = { tryReserve: async () => ({ waitMs: 60_000, limit: 'input_tokens_per_minute' }) };
    const controller = new AbortController();
    const started = Date.now();
    const turn = new BudgetedModelClient(answering(), budget).turn({ ...request, signal: controller.signal }).catch((error: unknown) => error);
    setTimeout(() => controller.abort(new Error('cancelled')), 50);
    expect(String(await turn)).toContain('cancelled');
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
