import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CreateTaskRequest } from '@dockhand/protocol';
import { SqliteStore } from '../store/sqlite';
import { requestHandBack } from './hand-back';
import { Scheduler } from './scheduler';

const request = (priority: 'normal' | 'routine') =>
  CreateTaskRequest.parse({ ticket: { kind: 'text', title: 't' }, context: { repo: 'r', baseSha: 'a'.repeat(40) }, priority });

let store: SqliteStore;
const schedulers: Scheduler[] = [];
beforeEach(() => { store = new SqliteStore(':memory:'); });
afterEach(async () => {
  for (const s of schedulers.splice(0)) await s.stop();
  await store.close();
});

async function until(check: () => boolean | Promise<boolean>, ms = 5000) {
  const end = Date.now() + ms;
  while (!(await check()) && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  expect(await check()).toBe(true);
}

function make(run: (taskId: string, signal: AbortSignal) => Promise<void>, options: Partial<{ concurrency: number; leaseMs: number; workerId: string; capacity: () => number }> = {}) {
  const scheduler = new Scheduler({
    store, run, concurrency: options.concurrency ?? 1, leaseMs: options.leaseMs ?? 300, pollMs: 20,
    ...(options.workerId ? { workerId: options.workerId } : {}), ...(options.capacity ? { capacity: options.capacity } : {}),
  });
  schedulers.push(scheduler);
  return scheduler;
}

describe('Scheduler', () => {
  it('runs normal before routine and never more than the concurrency limit', async () => {
    const routine = (await store.createTask('a', request('routine'))).task.id;
    const normal1 = (await store.createTask('a', request('normal'))).task.id;
    const normal2 = (await store.createTask('a', request('normal'))).task.id;
    const order: string[] = [];
    let concurrent = 0;
    let maxConcurrent = 0;
    const scheduler = make(async (taskId) => {
      order.push(taskId);
      concurrent += 1;
      maxConcurrent = Math.max(maxConcurrent, concurrent);
      await new Promise((r) => setTimeout(r, 30));
      await store.appendEvent(taskId, { type: 'task.state', data: { state: 'awaiting_review' } });
      concurrent -= 1;
    }, { concurrency: 2 });
    scheduler.start();
    await until(() => order.length === 3);
    expect(order.slice(0, 2).sort()).toEqual([normal1, normal2].sort());
    expect(order[2]).toBe(routine);
    expect(maxConcurrent).toBe(2);
  });

  it('a task whose worker died is resumed by another once the lease expires', async () => {
    const { task } = await store.createTask('a', request('normal'));
    await store.appendEvent(task.id, { type: 'task.state', data: { state: 'running' } });
    // The dead worker's lease, still valid for 200 ms.
    expect(await store.acquireLease(task.id, 'dead-worker', 200)).toBe(true);
    const runs: number[] = [];
    const started = Date.now();
    const scheduler = make(async (taskId) => {
      runs.push(Date.now() - started);
      await store.appendEvent(taskId, { type: 'task.state', data: { state: 'awaiting_review' } });
    }, { workerId: 'new-worker' });
    scheduler.start();
    await until(() => runs.length === 1);
    expect(runs[0]).toBeGreaterThanOrEqual(150);
  });

  it('renews the lease while work runs, and aborts local work when the task is cancelled', async () => {
    const { task } = await store.createTask('a', request('normal'));
    let aborted = false;
    const scheduler = make((_taskId, signal) => new Promise<void>((resolve) => {
      signal.addEventListener('abort', () => { aborted = true; resolve(); });
    }), { leaseMs: 150 });
    scheduler.start();
    await until(() => scheduler.active.length === 1);
    await new Promise((r) => setTimeout(r, 400));
    expect((await store.getLease(task.id))?.expiresAt).toBeGreaterThan(Date.now());
    await store.appendEvent(task.id, { type: 'task.state', data: { state: 'cancelled' } });
    await until(() => aborted);
    await until(async () => (await store.getLease(task.id)) === undefined);
  });

  it('drain: claims nothing new, lets a task that reaches review within the grace period finish, hands the other back', async () => {
    const quick = (await store.createTask('a', request('normal'))).task.id;
    const slow = (await store.createTask('a', request('normal'))).task.id;
    const waiting = (await store.createTask('a', request('normal'))).task.id;
    const started: string[] = [];
    const aborted: string[] = [];
    const scheduler = make(async (taskId, signal) => {
      started.push(taskId);
      await store.appendEvent(taskId, { type: 'task.state', data: { state: 'running' } });
      const ms = taskId === quick ? 150 : 60_000;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        signal.addEventListener('abort', () => { clearTimeout(timer); aborted.push(taskId); resolve(); }, { once: true });
      });
      if (!signal.aborted) await store.appendEvent(taskId, { type: 'task.state', data: { state: 'awaiting_review' } });
    }, { concurrency: 2, workerId: 'w1' });
    scheduler.start();
    await until(() => started.length === 2);
    const drained = await scheduler.drain(1_000);
    expect(drained).toEqual({ finished: [quick], handedBack: [slow] });
    expect(aborted).toEqual([slow]);
    expect((await store.getTask(quick))?.state).toBe('awaiting_review');
    // Handed back: still running in the log, no lease, so another worker claims it at once.
    expect((await store.getTask(slow))?.state).toBe('running');
    expect(await store.getLease(slow)).toBeUndefined();
    expect(started).not.toContain(waiting);
    expect(await store.acquireLease(slow, 'w2', 300)).toBe(true);
  });
  it('a run that hands its task back is aborted, keeps no worker, and the task is claimed again only after the delay', async () => {
    const { task } = await store.createTask('a', request('normal'));
    const runs: number[] = [];
    const reasons: string[] = [];
    const started = Date.now();
    const scheduler = make(async (taskId, signal) => {
      runs.push(Date.now() - started);
      if (runs.length === 1) {
        await store.appendEvent(taskId, { type: 'task.state', data: { state: 'running' } });
        // Deep inside the run (the model client): the model stayed unreachable.
        await Promise.resolve().then(() => expect(requestHandBack({ reason: 'connection refused', delayMs: 400 })).toBe(true));
        expect(signal.aborted).toBe(true);
        reasons.push(String((signal.reason as Error).message));
        return;
      }
      await store.appendEvent(taskId, { type: 'task.state', data: { state: 'awaiting_review' } });
    }, { leaseMs: 5_000, workerId: 'w1' });
    scheduler.start();
    await until(() => runs.length === 1 && scheduler.active.length === 0);
    expect(reasons[0]).toMatch(/handed back to the queue for 400 ms: connection refused/);
    // Not released: the lease now ends when the task may be taken up again, not at the run's 5 s.
    const lease = await store.getLease(task.id);
    expect(lease?.expiresAt).toBeGreaterThan(Date.now());
    expect(lease?.expiresAt).toBeLessThan(Date.now() + 1_000);
    expect(await store.acquireLease(task.id, 'w2', 300)).toBe(false);
    await until(() => runs.length === 2);
    expect(runs[1]! - runs[0]!).toBeGreaterThanOrEqual(350);
    expect((await store.getTask(task.id))?.state).toBe('awaiting_review');
  });

  it('outside a scheduler nobody can take a task back: the caller is told so', () => {
    expect(requestHandBack({ reason: 'x', delayMs: 1 })).toBe(false);
  });
  it('claims up to its capacity (free memory, sandboxes), never past the concurrency limit', async () => {
    for (let i = 0; i < 6; i++) await store.createTask('a', request('normal'));
    let room = 2;
    const running = new Set<string>();
    const release: Array<() => void> = [];
    const scheduler = make((taskId, signal) => new Promise<void>((resolve) => {
      running.add(taskId);
      signal.addEventListener('abort', () => resolve(), { once: true });
      release.push(() => {
        running.delete(taskId);
        void store.appendEvent(taskId, { type: 'task.state', data: { state: 'awaiting_review' } }).then(() => resolve());
      });
    }), { concurrency: 4, leaseMs: 5_000, capacity: () => room - running.size });
    scheduler.start();
    await until(() => running.size === 2);
    await new Promise((r) => setTimeout(r, 100));
    expect(running.size).toBe(2); // capacity 2 (the other 4 tasks wait)
    room = 10;
    await until(() => running.size === 4);
    await new Promise((r) => setTimeout(r, 100));
    expect(running.size).toBe(4); // the concurrency limit still holds
    room = 0;
    release.shift()?.();
    await new Promise((r) => setTimeout(r, 100));
    expect(running.size).toBe(3); // no room: the freed slot is not refilled
  });
});
