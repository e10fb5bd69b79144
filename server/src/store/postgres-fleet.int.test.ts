import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BudgetedModelClient } from '../model/budgeted-client';
import type { ModelClient, ModelTurnRequest } from '../model/types';
import { PostgresStore } from './postgres';
import { dropSchema, testDatabaseUrl, testSchema } from './postgres.test-support';

/*
 * Fleet-wide pieces on a real Postgres, each process with its own store (its own connections):
 * the model rate budget and the leadership of the PR outcome poller.
 */

describe('fleet-wide coordination on Postgres', () => {
  let url: string;
  let schema: string;
  let stores: PostgresStore[];
  const open = async () => {
    const store = await PostgresStore.open({ url, schema, poolSize: 3 });
    stores.push(store);
    return store;
  };
  beforeEach(async () => {
    url = await testDatabaseUrl();
    schema = testSchema();
    stores = [];
  });
  afterEach(async () => {
    for (const store of stores) await store.close();
    await dropSchema(url, schema);
  });

  it('the rate budget is shared: a reservation that does not fit the minute waits until tokens are given back', async () => {
    const [a, b] = [await open(), await open()];
    const budgetA = a.modelBudget({ inputTokensPerMinute: 1000 });
    const budgetB = b.modelBudget({ inputTokensPerMinute: 1000 });
    const first = await budgetA.tryReserve(600);
    expect('reservation' in first).toBe(true);
    const refused = await budgetB.tryReserve(600);
    expect(refused).toEqual({ waitMs: expect.any(Number), limit: 'input_tokens_per_minute' });
    expect('waitMs' in refused && refused.waitMs).toBeGreaterThan(50_000);
    if ('reservation' in first) await first.reservation.settle(100);
    expect('reservation' in (await budgetB.tryReserve(600))).toBe(true);
    expect(await budgetA.usage()).toEqual({ tokens: 700, requests: 2 });
  });

  it('a refusal names the limit that is full: requests per minute when the tokens would fit', async () => {
    const budget = (await open()).modelBudget({ inputTokensPerMinute: 1000, requestsPerMinute: 1 });
    expect('reservation' in (await budget.tryReserve(10))).toBe(true);
    expect(await budget.tryReserve(10)).toEqual({ waitMs: expect.any(Number), limit: 'requests_per_minute' });
    expect(await budget.tryReserve(995)).toEqual({ waitMs: expect.any(Number), limit: 'input_tokens_per_minute' });
  });

  it('reservations from many processes at once never overdraw the minute, and each is one round trip', async () => {
    const stores = [await open(), await open(), await open()];
    const budgets = stores.map((store) => store.modelBudget({ inputTokensPerMinute: 10_000, requestsPerMinute: 40 }));
    // 60 asks of 300 tokens, 20 per process, all in flight together: 33 fit the tokens, 40 the requests.
    const answers = await Promise.all(Array.from({ length: 60 }, (_, i) => budgets[i % 3]!.tryReserve(300)));
    const granted = answers.filter((answer) => 'reservation' in answer).length;
    expect(granted).toBe(33);
    expect(await budgets[0]!.usage()).toEqual({ tokens: 9900, requests: 33 });
    for (const answer of answers) if ('waitMs' in answer) expect(answer.waitMs).toBeGreaterThan(50_000);
    // One query per ask: a pool of one connection serves many asks without a transaction held open.
    const queries: string[] = [];
    const pool = stores[0]!.pool;
    const original = pool.query.bind(pool);
    pool.query = ((text: string, ...rest: unknown[]) => {
      queries.push(text);
      return (original as (...args: unknown[]) => unknown)(text, ...rest);
    }) as typeof pool.query;
    await budgets[0]!.tryReserve(1);
    expect(queries).toHaveLength(1);
    expect(queries[0]).toContain('pg_advisory_xact_lock');
  });

  it('a limit that is not a positive number is refused, naming it', async () => {
    const store = await open();
    expect(() => store.modelBudget({ inputTokensPerMinute: 0 })).toThrow(/inputTokensPerMinute must be a positive number/);
    expect(() => store.modelBudget({ requestsPerMinute: Number.NaN })).toThrow(/requestsPerMinute must be a positive number/);
  });

  it('a reservation larger than the whole minute is refused at once, naming the limit, instead of waiting forever', async () => {
    const store = await open();
    const budget = store.modelBudget({ inputTokensPerMinute: 1_000 });
    await expect(budget.tryReserve(1_001)).rejects.toMatchObject({ code: 'bad_request', field: 'modelBudget.inputTokensPerMinute', message: expect.stringMatching(/larger than the fleet's whole model budget of 1000/) });
    expect(await budget.tryReserve(1_000)).toHaveProperty('reservation');
  });

  it('a turn that does not fit waits for the budget instead of calling the model', async () => {
    const store = await open();
    const calls: number[] = [];
    const inner: ModelClient = {
      async turn() {
        calls.push(Date.now());
        return { model: 'm', costUsd: 0, message: { id: 'x', type: 'message', role: 'assistant', model: 'm', content: [], stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 10, output_tokens: 1, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, cache_creation: null, server_tool_use: null, service_tier: null } } } as never;
      },
    };
    const budget = store.modelBudget({ requestsPerMinute: 1 });
    const client = new BudgetedModelClient(inner, budget);
    const request: ModelTurnRequest = { system: [], tools: [], messages: [{ role: 'user', content: 'hi' }] };
    await client.turn(request);
    const controller = new AbortController();
    const second = client.turn({ ...request, signal: controller.signal }).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(calls).toHaveLength(1);
    expect(client.waits).toBe(1);
    controller.abort(new Error('stop'));
    expect(await second).toBeInstanceOf(Error);
  });

  it('one process leads the outcome poller; when it goes, another takes over', async () => {
    const [a, b] = [await open(), await open()];
    const leaderA = a.leadership('pr-outcome-poller');
    const leaderB = b.leadership('pr-outcome-poller');
    expect(await leaderA.isLeader()).toBe(true);
    expect(await leaderB.isLeader()).toBe(false);
    expect(await leaderA.isLeader()).toBe(true);
    await a.close();
    stores.splice(stores.indexOf(a), 1);
    // At once, no waiting: the close resolved only once the lock was free on the server.
    expect(await leaderB.isLeader()).toBe(true);
    expect(await leaderA.isLeader()).toBe(false);
  });

  it('a store closed while its process is asking for leadership gives up the lock that ask takes', async () => {
    const [a, b] = [await open(), await open()];
    const leaderA = a.leadership('pr-outcome-poller');
    const leaderB = b.leadership('pr-outcome-poller');
    const asking = leaderA.isLeader();
    await a.close();
    stores.splice(stores.indexOf(a), 1);
    expect(await asking).toBe(true);
    expect(await leaderB.isLeader()).toBe(true);
  });
});
