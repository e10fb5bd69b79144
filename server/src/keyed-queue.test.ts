import { describe, expect, it } from 'vitest';
import { KeyedQueue } from './keyed-queue';

/** A promise with its resolve/reject handles, to decide by hand when a piece of work ends. */
function gate() {
  let open!: () => void;
  let fail!: (error: Error) => void;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('KeyedQueue', () => {
  it('runs work under one key one at a time, in order, and other keys alongside', async () => {
    const queue = new KeyedQueue();
    const log: string[] = [];
    const first = gate();
    const other = gate();
    const a1 = queue.run('a', async () => { log.push('a1 start'); await first.promise; log.push('a1 end'); return 1; });
    const a2 = queue.run('a', async () => { log.push('a2 start'); return 2; });
    const b1 = queue.run('b', async () => { log.push('b1 start'); await other.promise; return 3; });
    await tick();
    // a2 waits for a1; b1 does not wait for anything under 'a'.
    expect(log).toEqual(['a1 start', 'b1 start']);
    first.open();
    expect(await a1).toBe(1);
    expect(await a2).toBe(2);
    expect(log).toEqual(['a1 start', 'b1 start', 'a1 end', 'a2 start']);
    other.open();
    expect(await b1).toBe(3);
    await tick();
    expect(queue.busyKeys).toBe(0);
  });

  it('hands a failure to its own caller and still runs the work queued behind it', async () => {
    const queue = new KeyedQueue();
    const first = gate();
    const failing = queue.run('a', () => first.promise);
    const next = queue.run('a', async () => 'ran');
    first.fail(new Error('push rejected'));
    await expect(failing).rejects.toThrow('push rejected');
    await expect(next).resolves.toBe('ran');
  });
});
