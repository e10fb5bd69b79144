import type { TaskEvent } from '@dockhand/protocol';
import type { SteeringMessage as LoopSteeringMessage, SteeringSource } from '../agent';
import type { SteeringMessage, Store } from '../store/types';

/**
 * Steering for one running loop, backed by the store's durable queue. The API queues a message
 * and pokes `refresh()`; the loop `take()`s queued messages before its next model call and records
 * each as its own `user.message` event; `recorded()` then marks the queued one as taken. A message
 * taken but not yet recorded when the process dies stays queued and is given again on resume.
 */
export class QueuedSteering implements SteeringSource {
  private readonly queue: SteeringMessage[] = [];
  private readonly handedOut: SteeringMessage[] = [];
  private readonly known = new Set<number>();

  constructor(private readonly store: Store, private readonly taskId: string) {}

  async refresh(): Promise<void> {
    for (const message of await this.store.pendingSteering(this.taskId)) {
      if (this.known.has(message.id)) continue;
      this.known.add(message.id);
      this.queue.push(message);
    }
  }

  take(): LoopSteeringMessage[] {
    const taken = this.queue.splice(0);
    this.handedOut.push(...taken);
    return taken.map((message) => ({ from: message.from, text: message.text }));
  }

  async recorded(event: TaskEvent): Promise<void> {
    if (event.type !== 'user.message') return;
    const index = this.handedOut.findIndex((m) => m.from === event.data.from && m.text === event.data.text);
    if (index < 0) return;
    const [message] = this.handedOut.splice(index, 1);
    if (message) await this.store.markSteeringTaken(message.id, event.seq);
  }
}
