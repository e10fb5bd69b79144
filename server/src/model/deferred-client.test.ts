import { describe, expect, it } from 'vitest';
import { DeferredModelClient } from './deferred-client';
import type { ModelClient, ModelTurnRequest, RetryNotice } from './types';

const request: ModelTurnRequest = { system: [], tools: [], messages: [{ role: 'user', content: 'hi' }] };

function recording(model: string): ModelClient & { turns: number } {
  return {
    turns: 0,
    async turn() {
      this.turns += 1;
      this.onRetry?.({ attempt: 1, model, reason: 'r', delayMs: 0 });
      return { model, costUsd: 0, message: {} } as never;
    },
  };
}

describe('DeferredModelClient', () => {
  it('makes the client once, on the first turn, and hands it the listeners the loop set', async () => {
    const inner = recording('claude-haiku-4-5');
    let made = 0;
    const client = new DeferredModelClient(async () => {
      made += 1;
      return inner;
    });
    expect(made).toBe(0);
    const notices: RetryNotice[] = [];
    client.onRetry = (notice) => notices.push(notice);
    expect((await client.turn(request)).model).toBe('claude-haiku-4-5');
    await client.turn(request);
    expect([made, inner.turns, notices.length]).toEqual([1, 2, 2]);
  });

  it('a make that fails fails the turn, and the next turn tries again', async () => {
    let calls = 0;
    const client = new DeferredModelClient(async () => {
      calls += 1;
      if (calls === 1) throw new Error('.dockhand/policy.yml: routineModel: no prices');
      return recording('m');
    });
    await expect(client.turn(request)).rejects.toThrow(/routineModel/);
    expect((await client.turn(request)).model).toBe('m');
  });
});
