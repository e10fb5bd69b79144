import type { NewEvent, TaskEvent } from '@dockhand/protocol';
import type { EventSink } from '../agent/ports';
import { maskEvent } from '../policy/mask';
import { policyWorkers } from '../policy/pool';
import type { Store } from './types';

export type EventListener = (event: TaskEvent) => void;

/**
 * In-process fan-out of events that are already durable. Listeners are called synchronously in
 * append order; a listener must not block (the WebSocket route only queues bytes and drops a slow
 * subscriber itself), so one slow client never stalls the task that produces events.
 */
export class EventHub {
  private readonly listeners = new Map<string, Set<EventListener>>();
  private readonly anyListeners = new Set<EventListener>();

  subscribe(taskId: string, listener: EventListener): () => void {
    let set = this.listeners.get(taskId);
    if (!set) {
      set = new Set();
      this.listeners.set(taskId, set);
    }
    set.add(listener);
    return () => {
      const current = this.listeners.get(taskId);
      if (!current) return;
      current.delete(listener);
      if (current.size === 0) this.listeners.delete(taskId);
    };
  }

  /** Every task's events (the scheduler wakes on state changes). */
  subscribeAll(listener: EventListener): () => void {
    this.anyListeners.add(listener);
    return () => this.anyListeners.delete(listener);
  }

  /** Tasks that have at least one subscriber. */
  subscribedTaskIds(): string[] {
    return [...this.listeners.keys()];
  }

  subscriberCount(taskId: string): number {
    return this.listeners.get(taskId)?.size ?? 0;
  }

  publish(event: TaskEvent): void {
    for (const listener of this.listeners.get(event.taskId) ?? []) listener(event);
    for (const listener of this.anyListeners) listener(event);
  }
}

/**
 * The one way events are written: durable in the store first, then published live. Everything
 * that appends (runner, approver, API) goes through here so subscribers never miss an event.
 * Secrets are masked here, before the store sees the event (`maskEvent`: detected secrets and the
 * `knownSecrets` the server holds, such as the push token), so no event path can store one.
 */
export class EventLog {
  constructor(readonly store: Store, readonly hub: EventHub, readonly knownSecrets: readonly string[] = []) {}

  async append(taskId: string, event: NewEvent): Promise<TaskEvent> {
    const stored = await this.store.appendEvent(taskId, maskEvent(event, this.knownSecrets));
    this.hub.publish(stored);
    return stored;
  }

  /**
   * A task's final diff and summary as they may be stored: every secret masked (see `append`).
   * On a policy worker thread: a diff can be tens of megabytes, and masking it on the event loop
   * stalled every other request.
   */
  maskResult(result: { diff: string; summary: string }): Promise<{ diff: string; summary: string }> {
    return policyWorkers.run('maskResult', result, [...this.knownSecrets]);
  }

  /** Stores a task's final diff and summary, masked (`maskResult`). */
  async setResult(taskId: string, result: { diff: string; summary: string }): Promise<void> {
    await this.store.setResult(taskId, await this.maskResult(result));
  }

  /** Publishes events the store appended itself inside a larger transaction. */
  published(events: TaskEvent[]): void {
    for (const event of events) this.hub.publish(event);
  }

  sinkFor(taskId: string): EventSink {
    return { append: (event) => this.append(taskId, event) };
  }
}
