/**
 * Runs async work one piece at a time per key, in the order it was queued; work under different
 * keys runs concurrently. A failure is handed to its own caller and does not stop the work queued
 * behind it.
 *
 * In-process only: it serialises the callers of one server. Two processes sharing a directory
 * would need a file lock; the fleet runs one server per store (see the README's known limits).
 */
export class KeyedQueue {
  /** The settled-or-not end of each key's chain; absent when the key is idle. */
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with work queued or running. */
  get busyKeys(): number {
    return this.tails.size;
  }
}
