import { FINAL_STATES, type TaskEvent, type TaskState } from '@dockhand/protocol';
import type { SteeringMessage, SteeringSource } from '../agent';
import { NOTE_AUTHOR } from '../agent/loop';
import type { EventHub } from '../store/hub';

/**
 * Steering for one running loop. The API records a developer's message as `user.message` when it
 * arrives (durable, visible at once); this source hands the ones that arrive during the run to
 * the loop, which injects them before its next model call without recording them again. A pause
 * request (`task.pause_requested`) arrives the same way; `task.resumed` withdraws one not reached.
 *
 * Subscribe before reading the log the loop starts from, and pass that log's last seq: a message
 * or pause is then either in the prior events or delivered here, never neither.
 */
export function hubSteering(hub: EventHub, taskId: string): SteeringSource & { startAfter(seq: number, prior?: readonly TaskEvent[]): void; close(): void } {
  const queued: Array<SteeringMessage & { seq: number }> = [];
  const pauses: TaskEvent[] = [];
  let after = Number.POSITIVE_INFINITY;
  let pause: string | undefined;
  const unsubscribe = hub.subscribe(taskId, (event) => {
    if (event.type === 'user.message' && event.data.from !== NOTE_AUTHOR) queued.push({ ...event.data, seq: event.seq });
    if (event.type === 'task.pause_requested' || event.type === 'task.resumed') pauses.push(event);
  });
  return {
    startAfter(seq, prior = []) {
      after = seq;
      pause = pendingPause(prior);
    },
    take() {
      return queued.splice(0).filter((m) => m.seq > after).map(({ from, text }) => ({ from, text }));
    },
    pauseRequested() {
      for (const event of pauses.splice(0)) {
        if (event.seq <= after) continue;
        if (event.type === 'task.pause_requested') pause = event.data.by;
        if (event.type === 'task.resumed') pause = undefined;
      }
      return pause;
    },
    close: unsubscribe,
  };
}

/** States that answer a pause request: the agent stopped anyway (for review, or for good). */
const ENDS_A_PAUSE_REQUEST: readonly TaskState[] = ['paused', 'awaiting_review', 'pr_open', ...FINAL_STATES];

/**
 * Who asked for a pause the loop has not reached yet: a `task.pause_requested` after the task was
 * last paused, resumed or stopped for review. It survives a restart in between (the log holds it).
 */
export function pendingPause(events: readonly TaskEvent[]): string | undefined {
  let pause: string | undefined;
  for (const event of events) {
    if (event.type === 'task.pause_requested') pause = event.data.by;
    else if (event.type === 'task.resumed' || (event.type === 'task.state' && ENDS_A_PAUSE_REQUEST.includes(event.data.state))) pause = undefined;
  }
  return pause;
}
