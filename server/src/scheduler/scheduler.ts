import { randomBytes } from 'node:crypto';
import { isFinalState } from '@dockhand/protocol';
import type { Logger } from '../log';
import type { Store } from '../store/types';

export interface SchedulerOptions {
  store: Store;
  /** Does the task's next piece of work; resolves when it waits for a human or ends. */
  run: (taskId: string, signal: AbortSignal) => Promise<void>;
  concurrency: number;
  leaseMs: number;
  pollMs: number;
  workerId?: string;
  logger?: Logger;
}

/**
 * Leases runnable tasks (queued, or active with an expired lease — the crash case) up to the
 * concurrency limit, normal priority before routine, oldest first. A held lease is renewed every
 * third of its life; a renewal that fails (another worker took over) or a task the API moved to
 * a final state aborts the local work. Leases — not in-process locks — are what keep two servers
 * on one store from working on the same task.
 */
export class Scheduler {
  readonly workerId: string;
  private readonly running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private again = false;
  private stopped = true;

  constructor(private readonly options: SchedulerOptions) {
    this.workerId = options.workerId ?? `worker-${randomBytes(4).toString('hex')}`;
  }

  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => this.wake(), this.options.pollMs);
    this.timer.unref();
    this.wake();
  }

  get active(): string[] {
    return [...this.running.keys()];
  }

  wake(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.ticking = true;
    void this.tick()
      .catch((error: unknown) => this.options.logger?.error({ err: error }, 'scheduler tick failed'))
      .finally(() => {
        this.ticking = false;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  interrupt(taskId: string): void {
    this.running.get(taskId)?.controller.abort(new Error('interrupted'));
  }

  /** Stops taking work, aborts what runs (it stays active in the store) and releases leases. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    for (const job of this.running.values()) job.controller.abort(new Error('server stopping'));
    await Promise.allSettled([...this.running.values()].map((job) => job.done));
  }

  private async tick(): Promise<void> {
    const free = this.options.concurrency - this.running.size;
    if (free <= 0) return;
    const candidates = await this.options.store.listRunnable(free + this.running.size);
    for (const task of candidates) {
      if (this.running.size >= this.options.concurrency || this.stopped) break;
      if (this.running.has(task.id)) continue;
      if (!(await this.options.store.acquireLease(task.id, this.workerId, this.options.leaseMs))) continue;
      this.launch(task.id);
    }
  }

  private launch(taskId: string): void {
    const { store, leaseMs, logger } = this.options;
    const controller = new AbortController();
    const heartbeat = setInterval(() => {
      void (async () => {
        const renewed = await store.renewLease(taskId, this.workerId, leaseMs);
        const task = await store.getTask(taskId);
        if (!renewed || !task || isFinalState(task.state)) controller.abort(new Error(renewed ? 'task ended' : 'lease lost'));
      })().catch((error: unknown) => logger?.warn({ err: error, taskId }, 'lease heartbeat failed'));
    }, Math.max(Math.floor(leaseMs / 3), 50));
    heartbeat.unref();
    const done = (async () => {
      try {
        await this.options.run(taskId, controller.signal);
      } catch (error) {
        logger?.error({ err: error, taskId }, 'task run failed');
      } finally {
        clearInterval(heartbeat);
        await store.releaseLease(taskId, this.workerId).catch(() => undefined);
        this.running.delete(taskId);
        this.wake();
      }
    })();
    this.running.set(taskId, { controller, done });
  }
}
