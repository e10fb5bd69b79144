import { createRequire } from 'node:module';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { PolicyJobName, PolicyJobs } from './jobs';

/**
 * Policy work on a diff (masking, the gate) runs on worker threads, never on the event loop: a
 * 30 MB diff used to freeze every request of the server, `/healthz` included, for 18 minutes.
 * The work is linear now, but even linear work on tens of megabytes takes seconds, and no task
 * may stall other tasks' requests or events.
 *
 * Node's own `worker_threads` rather than a pool library: one message type, and the worker must
 * start from the esbuild bundle (see `workerEntry`), which a library's file-path loading does not
 * know about. Threads start on first use and are unreferenced while idle, so they never keep a
 * process alive.
 */

/** `workerData` flag by which the server bundle, started as a worker, knows to serve policy jobs. */
export const POLICY_WORKER_FLAG = 'dockhandPolicyWorker';

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
}

/**
 * Under tsx (and vitest) this module is a `.ts` file: the worker loads `worker.ts` through tsx.
 * In the esbuild bundle every module is the bundle, so the worker loads the bundle itself with a
 * flag (`cli/bin.ts` then imports `worker.ts` instead of starting the CLI).
 */
function workerEntry(): { url: URL } | { code: string } {
  const here = new URL(import.meta.url);
  if (!here.pathname.endsWith('.ts')) return { url: here };
  // tsx's hooks do not reach a worker thread by themselves, nor through `--import tsx` in its
  // execArgv (Node 20 loads the entry first): the worker registers tsx, then imports worker.ts.
  // tsx's `esm/api` import entry (a `require` resolve would give its CommonJS twin).
  const tsx = pathToFileURL(join(dirname(createRequire(here).resolve('tsx/package.json')), 'dist/esm/api/index.mjs')).href;
  const worker = new URL('./worker.ts', here).href;
  return { code: `import(${JSON.stringify(tsx)}).then((api) => { api.register(); return import(${JSON.stringify(worker)}); });` };
}

export class PolicyPool {
  private readonly slots: Slot[] = [];
  private nextId = 1;
  private turn = 0;

  constructor(private readonly size = Math.max(1, Math.min(2, availableParallelism() - 1))) {}

  /** Runs one job on a worker thread; resolves with its result or rejects with its error. */
  run<Name extends PolicyJobName>(name: Name, ...args: Parameters<PolicyJobs[Name]>): Promise<ReturnType<PolicyJobs[Name]>> {
    const slot = this.pick();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      slot.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      slot.worker.ref();
      slot.worker.postMessage({ id, name, args });
    });
  }

  /** Stops the threads (pending jobs fail). */
  async close(): Promise<void> {
    const slots = this.slots.splice(0);
    await Promise.all(slots.map((slot) => slot.worker.terminate()));
  }

  private pick(): Slot {
    if (this.slots.length < this.size) return this.start();
    // The slot with the fewest jobs in flight; ties go round.
    this.turn = (this.turn + 1) % this.slots.length;
    let best = this.slots[this.turn]!;
    for (const slot of this.slots) if (slot.pending.size < best.pending.size) best = slot;
    return best;
  }

  private start(): Slot {
    const entry = workerEntry();
    const workerData = { [POLICY_WORKER_FLAG]: true };
    const worker = 'url' in entry ? new Worker(entry.url, { workerData }) : new Worker(entry.code, { eval: true, workerData });
    const slot: Slot = { worker, pending: new Map() };
    worker.unref();
    worker.on('message', (message: { id: number; ok: boolean; value?: unknown; error?: { message: string; stack?: string } }) => {
      const pending = slot.pending.get(message.id);
      if (!pending) return;
      slot.pending.delete(message.id);
      if (slot.pending.size === 0) worker.unref();
      if (message.ok) pending.resolve(message.value);
      else pending.reject(Object.assign(new Error(`policy worker: ${message.error?.message ?? 'failed'}`), { stack: message.error?.stack }));
    });
    const fail = (error: Error) => {
      const index = this.slots.indexOf(slot);
      if (index >= 0) this.slots.splice(index, 1);
      for (const pending of slot.pending.values()) pending.reject(new Error(`policy worker thread stopped: ${error.message}`));
      slot.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`exit code ${code}`)));
    this.slots.push(slot);
    return slot;
  }
}

/** The process's policy threads (one or two: this machine class has two cores). */
export const policyWorkers = new PolicyPool();
