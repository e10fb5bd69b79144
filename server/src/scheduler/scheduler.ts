import { randomBytes } from 'node:crypto';
import { isFinalState } from '@dockhand/protocol';
import type { Logger } from '../log';
import { withLeaseFence, type LeaseFence } from '../store/lease-fence';
import { withHandBack, type HandBackRequest } from './hand-back';
import { canClaim } from '../store/queue';
import type { Store } from '../store/types';

export interface SchedulerOptions {
  store: Store;
  /** Does the task's next piece of work; resolves when it waits for a human or ends. */
  run: (taskId: string, signal: AbortSignal) => Promise<void>;
  concurrency: number;
  /**
   * Tasks this worker has room for besides those it runs (free memory over a task's share, free
   * sandboxes): asked before each claim, so a worker claims up to its capacity, never past
   * `concurrency`. Absent: only `concurrency` limits it.
   */
  capacity?: () => number;
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
 *
 * On a store that is a shared queue (Postgres, `ClaimingStore`) a tick is one claim statement, and
 * each claimed task runs inside its lease's fence (`lease-fence.ts`): the store refuses the run's
 * writes once the lease is someone else's. There a heartbeat that cannot reach the store aborts
 * the run when 60% of the lease has passed since the last renewal that did, so a worker cut off
 * from the store stops acting before another worker may take the task over.
 *
 * A run may hand its task back (`hand-back.ts`: the model stayed unreachable through its retry
 * budget): the run is aborted and, instead of releasing the lease, the scheduler keeps it until
 * the requested delay has passed, so the task waits in the queue — on no worker — and is claimed
 * again after it, by whichever worker has room.
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

  /**
   * The graceful half of a shutdown (SIGTERM): stops claiming at once, lets what runs go on — its
   * heartbeats keep its leases — until it reaches a point where it waits for a human or ends, for
   * at most `graceMs`; what still runs then is handed back (`stop`: aborted, lease released, so
   * another worker claims it at its next poll instead of after the lease's expiry). Resolves with
   * the tasks that finished within the grace period and those handed back.
   */
  async drain(graceMs: number): Promise<{ finished: string[]; handedBack: string[] }> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    const running = [...this.running.entries()];
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([Promise.allSettled(running.map(([, job]) => job.done)), grace]);
    clearTimeout(timer);
    const handedBack = running.map(([taskId]) => taskId).filter((taskId) => this.running.has(taskId));
    const finished = running.map(([taskId]) => taskId).filter((taskId) => !handedBack.includes(taskId));
    await this.stop();
    return { finished, handedBack };
  }

  /** Stops taking work, aborts what runs (it stays active in the store) and releases leases. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    for (const job of this.running.values()) job.controller.abort(new Error('server stopping'));
    await Promise.allSettled([...this.running.values()].map((job) => job.done));
  }

  private async tick(): Promise<void> {
    const room = this.options.capacity ? Math.max(0, Math.floor(this.options.capacity())) : Number.POSITIVE_INFINITY;
    const free = Math.min(this.options.concurrency - this.running.size, room);
    if (free <= 0) return;
    const { store } = this.options;
    if (canClaim(store)) {
      const asked = Date.now();
      const claims = await store.claimRunnable(this.workerId, free, this.options.leaseMs, { exclude: [...this.running.keys()] });
      for (const claim of claims) {
        const fence = { taskId: claim.task.id, workerId: this.workerId, epoch: claim.epoch };
        // Stopped while the claim was on its way: hand the task straight back.
        if (this.stopped) await withLeaseFence(fence, () => store.releaseLease(claim.task.id, this.workerId));
        else this.launch(claim.task.id, fence, asked);
      }
      return;
    }
    const candidates = await this.options.store.listRunnable(free + this.running.size);
    const limit = this.running.size + free;
    for (const task of candidates) {
      if (this.running.size >= limit || this.stopped) break;
      if (this.running.has(task.id)) continue;
      if (!(await this.options.store.acquireLease(task.id, this.workerId, this.options.leaseMs))) continue;
      this.launch(task.id);
    }
  }

  /** `leasedAt`: when the lease was asked for (its expiry is at least leaseMs after that). */
  private launch(taskId: string, fence?: LeaseFence, leasedAt = Date.now()): void {
    const { store, leaseMs, logger } = this.options;
    const controller = new AbortController();
    // The heartbeat and the run carry the fence in their async context (timers keep the context
    // they were created in); without a fence (SQLite) they run as they always did.
    const fenced = <T>(work: () => T): T => (fence ? withLeaseFence(fence, work) : work());
    // Fenced: a beat every quarter lease; one missed renewal is tolerated, and once 60% of the
    // lease has passed since the last renewal that reached the store (sent time: the store's
    // expiry is later than that) the run is aborted, a quarter lease before anyone may claim it.
    let renewedAt = leasedAt;
    const heartbeat = fenced(() => setInterval(() => {
      if (fence && Date.now() - renewedAt > leaseMs * 0.6) controller.abort(new Error('lease may be lost: no renewal reached the store'));
      const sent = Date.now();
      void (async () => {
        // On a shared queue one statement renews and reads the state; elsewhere two calls.
        const { renewed, state } = canClaim(store)
          ? await store.renewLeaseWithState(taskId, this.workerId, leaseMs)
          : await store.renewLease(taskId, this.workerId, leaseMs).then(async (ok) => ({ renewed: ok, state: (await store.getTask(taskId))?.state }));
        if (renewed) renewedAt = sent;
        if (!renewed || !state || isFinalState(state)) controller.abort(new Error(renewed ? 'task ended' : 'lease lost'));
      })().catch((error: unknown) => logger?.warn({ err: error, taskId }, 'lease heartbeat failed'));
    }, Math.max(Math.floor(leaseMs / (fence ? 4 : 3)), 50)));
    heartbeat.unref();
    let handedBack: HandBackRequest | undefined;
    const handBack = (request: HandBackRequest): void => {
      if (handedBack || controller.signal.aborted) return;
      handedBack = request;
      controller.abort(new Error(`handed back to the queue for ${request.delayMs} ms: ${request.reason}`));
    };
    const done = fenced(() => withHandBack(handBack, async () => {
      try {
        await this.options.run(taskId, controller.signal);
      } catch (error) {
        logger?.error({ err: error, taskId }, 'task run failed');
      } finally {
        clearInterval(heartbeat);
        if (handedBack) {
          // The lease now ends when the task may be taken up again (renewal sets expiry = now + ttl).
          logger?.warn({ taskId, delayMs: handedBack.delayMs, reason: handedBack.reason }, 'task handed back to the queue');
          const kept = await store.renewLease(taskId, this.workerId, Math.max(1, handedBack.delayMs)).catch(() => false);
          if (!kept) await store.releaseLease(taskId, this.workerId).catch(() => undefined);
        } else {
          await store.releaseLease(taskId, this.workerId).catch(() => undefined);
        }
        this.running.delete(taskId);
        this.wake();
      }
    }));
    this.running.set(taskId, { controller, done });
  }
}
