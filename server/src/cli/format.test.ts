import { describe, expect, it } from 'vitest';
import type { EventPayload, TaskEvent } from '@dockhand/protocol';
import { describeEvent } from './format';

function budgetWait(data: EventPayload<'model.budget_wait'>): TaskEvent {
  return { taskId: 't_1', seq: 7, ts: '2026-12-03T08:00:00.000Z', type: 'model.budget_wait', data };
}

describe('describeEvent: model.budget_wait', () => {
  it('says which limit is full and the estimate while a turn waits', () => {
    const line = describeEvent(budgetWait({ phase: 'waiting', limit: 'input_tokens_per_minute', windowSeconds: 60, tokens: 45_000, waitMs: 12_400 }));
    expect(line).toBe("waiting for the fleet's model budget: input tokens per minute are used up; the turn goes ahead in about 12 s (this turn: ~45,000 input tokens)");
  });

  it('names the request limit without a token count', () => {
    const line = describeEvent(budgetWait({ phase: 'waiting', limit: 'requests_per_minute', windowSeconds: 60, tokens: 900, waitMs: 3_000 }));
    expect(line).toBe("waiting for the fleet's model budget: requests per minute are used up; the turn goes ahead in about 3 s");
  });

  it('says how long the turn waited once it goes ahead (at least 1 s)', () => {
    expect(describeEvent(budgetWait({ phase: 'done', limit: 'requests_per_minute', windowSeconds: 60, tokens: 900, waitMs: 31_600 }))).toBe(
      "waited 32 s for the fleet's model budget (requests per minute); the turn went ahead",
    );
    expect(describeEvent(budgetWait({ phase: 'done', limit: 'input_tokens_per_minute', windowSeconds: 60, tokens: 10, waitMs: 120 }))).toBe(
      "waited 1 s for the fleet's model budget (input tokens per minute); the turn went ahead",
    );
  });
});
