import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CreateTaskRequest } from '@dockhand/protocol';
import { AnthropicModelClient } from '../model/anthropic-client';
import { startReplayServer, type ReplayServer } from '../model/replay/server';
import type { ModelTurnRequest } from '../model/types';
import { PostgresStore } from '../store/postgres';
import { dropSchema, testDatabaseUrl, testSchema } from '../store/postgres.test-support';
import { Scheduler } from './scheduler';

/*
 * Hand-back on the Postgres queue with two schedulers (each its own store, as two worker processes):
 * a model that stays unreachable through its retry budget hands the task back; nobody holds it
 * during the delay; the other worker claims it after and the task ends with one push.
 */

const DELAY_MS = 1_500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const turnRequest = (signal: AbortSignal): ModelTurnRequest => ({ system: [], tools: [], messages: [{ role: 'user', content: 'fix it' }], signal });

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('hand-back on the Postgres queue, two schedulers', () => {
  let url: string;
  let schema: string;
  let stores: PostgresStore[];
  let schedulers: Scheduler[];
  let replay: ReplayServer;
  const open = async () => {
    const store = await PostgresStore.open({ url, schema, poolSize: 4 });
    stores.push(store);
    return store;
  };
  beforeEach(async () => {
    url = await testDatabaseUrl();
    schema = testSchema();
    stores = [];
    schedulers = [];
    replay = await startReplayServer({ cassettes: { fix: { turns: [{ content: [{ type: 'text', text: 'done' }] }] } } });
  });
  afterEach(async () => {
    for (const scheduler of schedulers) await scheduler.stop();
    for (const store of stores) await store.close();
    await replay.close();
    await dropSchema(url, schema);
  });

  it('an unreachable model hands the task back; no worker holds it during the delay; the other worker claims it after and pushes once', async () => {
    const api = await open();
    const { task } = await api.createTask('alice', CreateTaskRequest.parse({ ticket: { kind: 'text', title: 't' }, context: { repo: 'r', baseSha: 'a'.repeat(40) } }));
    const runs: Array<{ worker: string; at: number; aborted?: boolean }> = [];
    const pushes: string[] = [];
    let handedBackAt = 0;
    // Worker A's model: nothing listens there (connection refused on every attempt). Worker B's: the replay server.
    const worker = (name: string, store: PostgresStore, baseURL: string) => {
      const scheduler = new Scheduler({
        store,
        workerId: name,
        concurrency: 1,
        leaseMs: 10_000,
        pollMs: 25,
        run: async (taskId, signal) => {
          const run: { worker: string; at: number; aborted?: boolean } = { worker: name, at: Date.now() };
          runs.push(run);
          await store.appendEvent(taskId, { type: 'task.state', data: { state: 'running' } });
          const model = new AnthropicModelClient({
            apiKey: 'replay:fix', baseURL, model: 'claude-sonnet-4-6', timeoutMs: 2_000,
            retry: { maxAttempts: 2, baseDelayMs: 10, jitter: 0, handBackDelayMs: DELAY_MS },
          });
          try {
            await model.turn(turnRequest(signal));
          } catch (error) {
            run.aborted = signal.aborted;
            handedBackAt = Date.now();
            throw error;
          }
          // The push: the lease is confirmed first, as the publisher does (a stale worker would be refused here).
          await store.confirmLease(taskId, 10_000);
          pushes.push(`${name}:${taskId}`);
          await store.appendEvent(taskId, { type: 'task.state', data: { state: 'awaiting_review' } });
        },
      });
      schedulers.push(scheduler);
      return scheduler;
    };
    const a = worker('worker-a', await open(), 'http://127.0.0.1:9');
    a.start();
    await until(() => handedBackAt > 0 && a.active.length === 0, 'worker A to hand the task back');
    expect(runs).toEqual([{ worker: 'worker-a', at: expect.any(Number), aborted: true }]);
    // Worker A goes away; its lease is kept until the hand-back delay, so B cannot take it before.
    await a.stop();
    const lease = await api.getLease(task.id);
    expect(lease?.expiresAt).toBeGreaterThan(Date.now());
    expect(lease?.expiresAt).toBeLessThanOrEqual(handedBackAt + DELAY_MS + 500);
    const b = worker('worker-b', await open(), replay.url);
    b.start();
    await sleep(DELAY_MS / 2);
    expect(runs).toHaveLength(1);
    expect(b.active).toEqual([]);
    await until(async () => (await api.getTask(task.id))?.state === 'awaiting_review', 'worker B to finish the task');
    expect(runs.map((run) => run.worker)).toEqual(['worker-a', 'worker-b']);
    expect(runs[1]!.at - handedBackAt).toBeGreaterThanOrEqual(DELAY_MS - 100);
    expect(pushes).toEqual([`worker-b:${task.id}`]);
    expect(replay.requests('fix')).toHaveLength(1);
    const states = (await api.listEvents(task.id)).flatMap((event) => (event.type === 'task.state' ? [event.data.state] : []));
    expect(states.at(-1)).toBe('awaiting_review');
  });
});
