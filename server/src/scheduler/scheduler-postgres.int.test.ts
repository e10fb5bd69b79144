import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CreateTaskRequest } from '@dockhand/protocol';
import { PostgresStore } from '../store/postgres';
import { dropSchema, testDatabaseUrl, testSchema } from '../store/postgres.test-support';
import { Scheduler } from './scheduler';

/*
 * Schedulers of several workers on one Postgres queue: each worker has its own store (its own
 * connections), as separate processes would.
 */

const request = (priority: 'normal' | 'routine') =>
  CreateTaskRequest.parse({ ticket: { kind: 'text', title: 't' }, context: { repo: 'r', baseSha: 'a'.repeat(40) }, priority });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

describe('Scheduler on the Postgres queue', () => {
  let url: string;
  let schema: string;
  let stores: PostgresStore[];
  let schedulers: Scheduler[];
  const open = async () => {
    const store = await PostgresStore.open({ url, schema, poolSize: 4 });
    stores.push(store);
    return store;
  };
  const schedule = (store: PostgresStore, workerId: string, run: (taskId: string, signal: AbortSignal) => Promise<void>, options: { concurrency?: number; leaseMs?: number } = {}) => {
    const scheduler = new Scheduler({ store, run, workerId, concurrency: options.concurrency ?? 2, leaseMs: options.leaseMs ?? 5_000, pollMs: 25 });
    schedulers.push(scheduler);
    return scheduler;
  };
  beforeEach(async () => {
    url = await testDatabaseUrl();
    schema = testSchema();
    stores = [];
    schedulers = [];
  });
  afterEach(async () => {
    for (const scheduler of schedulers) await scheduler.stop();
    for (const store of stores) await store.close();
    await dropSchema(url, schema);
  });

  it('two workers run each task once, normal before routine, within their capacity', async () => {
    const api = await open();
    const routine: string[] = [];
    for (let i = 0; i < 2; i++) routine.push((await api.createTask('alice', request('routine'))).task.id);
    const normal: string[] = [];
    for (let i = 0; i < 4; i++) normal.push((await api.createTask('alice', request('normal'))).task.id);
    const started: Array<{ taskId: string; worker: string; epoch: number }> = [];
    const running = new Map<string, number>();
    let overCapacity = false;
    const run = (worker: string, store: PostgresStore) => async (taskId: string) => {
      // The claim order is the lease epochs' (one sequence, taken in the claim's statement); the
      // order two workers' runs start in is not: each claim's answer comes on its own connection.
      started.push({ taskId, worker, epoch: (await store.getLease(taskId))?.epoch ?? Number.NaN });
      running.set(worker, (running.get(worker) ?? 0) + 1);
      if ((running.get(worker) ?? 0) > 2) overCapacity = true;
      // Written under the claim's fence: it lands because this worker holds the lease.
      await store.appendEvent(taskId, { type: 'task.state', data: { state: 'running' } });
      await sleep(300);
      await store.appendEvent(taskId, { type: 'task.state', data: { state: 'awaiting_review', reason: `done by ${worker}` } });
      running.set(worker, (running.get(worker) ?? 0) - 1);
    };
    const [a, b] = [await open(), await open()];
    schedule(a, 'worker-a', run('worker-a', a)).start();
    schedule(b, 'worker-b', run('worker-b', b)).start();
    await until(async () => (await api.listTasks({ state: 'awaiting_review' })).tasks.length === 6, 'all six tasks to reach review');
    expect(started.map((s) => s.taskId).sort()).toEqual([...normal, ...routine].sort());
    const claimed = [...started].sort((x, y) => x.epoch - y.epoch);
    const firstRoutine = claimed.findIndex((s) => routine.includes(s.taskId));
    expect(claimed.slice(0, firstRoutine).map((s) => s.taskId).sort()).toEqual([...normal].sort());
    expect(new Set(started.map((s) => s.worker))).toEqual(new Set(['worker-a', 'worker-b']));
    expect(overCapacity).toBe(false);
  });

  it('the heartbeat renews the lease and reads the state in one statement: a task cancelled in the store (no notice heard) aborts the run', async () => {
    const api = await open();
    const { task } = await api.createTask('alice', request('normal'));
    const worker = await open();
    let aborted: unknown;
    const scheduler = schedule(worker, 'worker-a', (_taskId, signal) => new Promise<void>((resolve) => {
      signal.addEventListener('abort', () => { aborted = signal.reason; resolve(); });
    }), { leaseMs: 400 });
    scheduler.start();
    await until(() => scheduler.active.length === 1, 'the claim');
    const first = (await api.getLease(task.id))!.expiresAt;
    await until(async () => (await api.getLease(task.id))!.expiresAt > first, 'a renewal');
    expect(await worker.renewLeaseWithState(task.id, 'worker-a', 400)).toEqual({ renewed: true, state: 'provisioning' });
    expect(await worker.renewLeaseWithState(task.id, 'worker-b', 400)).toEqual({ renewed: false });
    await api.appendEvent(task.id, { type: 'task.state', data: { state: 'cancelled' } });
    await until(() => aborted !== undefined, 'the abort at the next beat');
    expect(String(aborted)).toMatch(/task ended/);
  });

  it('a worker cut off from the store stops before its lease expires; the next worker resumes and the stale write is refused', async () => {
    const api = await open();
    const { task } = await api.createTask('alice', request('normal'));
    const cutOff = await open();
    const healthy = await open();
    const leaseMs = 800;
    let abortedAt: number | undefined;
    let staleWrite: unknown;
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => { release = resolve; });
    schedule(cutOff, 'worker-cut', async (taskId, signal) => {
      await cutOff.appendEvent(taskId, { type: 'task.state', data: { state: 'running', reason: 'worker-cut' } });
      // From here on the heartbeat cannot reach the store (a network cut, as seen by this worker).
      cutOff.renewLease = async () => { throw new Error('connect ETIMEDOUT'); };
      cutOff.renewLeaseWithState = async () => { throw new Error('connect ETIMEDOUT'); };
      signal.addEventListener('abort', () => { abortedAt = Date.now(); }, { once: true });
      // A worker that does not look at its signal and writes again later, after the takeover.
      await gate;
      staleWrite = await cutOff.appendEvent(taskId, { type: 'assistant.text', data: { turn: 1, text: 'stale' } }).catch((error: unknown) => error);
    }, { concurrency: 1, leaseMs }).start();
    await until(async () => (await api.getLease(task.id))?.workerId === 'worker-cut', 'the first claim');
    const first = await api.getLease(task.id);
    let resumedAt: number | undefined;
    schedule(healthy, 'worker-ok', async (taskId) => {
      resumedAt ??= Date.now();
      await healthy.appendEvent(taskId, { type: 'assistant.text', data: { turn: 1, text: 'resumed' } });
      await healthy.appendEvent(taskId, { type: 'task.state', data: { state: 'awaiting_review' } });
    }, { concurrency: 1, leaseMs }).start();
    await until(() => resumedAt !== undefined, 'the other worker to resume the task');
    expect(abortedAt).toBeDefined();
    expect(abortedAt!).toBeLessThan(first!.expiresAt);
    release();
    await until(() => staleWrite !== undefined, 'the stale write to come back');
    expect(staleWrite).toMatchObject({ code: 'conflict', message: expect.stringMatching(/lease lost/) });
    await until(async () => (await api.getTask(task.id))?.state === 'awaiting_review', 'the resumed run to finish');
    const texts = (await api.listEvents(task.id)).flatMap((e) => (e.type === 'assistant.text' ? [e.data.text] : []));
    expect(texts).toEqual(['resumed']);
  });
});
