import type { SteeringMessage, SteeringSource } from '../agent';
import { NOTE_AUTHOR } from '../agent/loop';
import type { EventHub } from '../store/hub';

/**
 * Steering for one running loop. The API records a developer's message as `user.message` when it
 * arrives (durable, visible at once); this source hands the ones that arrive during the run to
 * the loop, which injects them before its next model call without recording them again.
 *
 * Subscribe before reading the log the loop starts from, and pass that log's last seq: a message
 * is then either in the prior events or delivered here, never neither.
 */
export function hubSteering(hub: EventHub, taskId: string): SteeringSource & { startAfter(seq: number): void; close(): void } {
  const queued: Array<SteeringMessage & { seq: number }> = [];
  let after = Number.POSITIVE_INFINITY;
  const unsubscribe = hub.subscribe(taskId, (event) => {
    if (event.type === 'user.message' && event.data.from !== NOTE_AUTHOR) queued.push({ ...event.data, seq: event.seq });
  });
  return {
    startAfter(seq) {
      after = seq;
    },
    take() {
      return queued.splice(0).filter((m) => m.seq > after).map(({ from, text }) => ({ from, text }));
    },
    close: unsubscribe,
  };
}
