import { TaskEvent, type EventType, type NewEvent, type TaskEventOf } from '@dockhand/protocol';
import type { EventSink } from '../ports';

/** An in-memory event log for tests; every event is validated against the protocol schema. */
export class MemoryEventSink implements EventSink {
  readonly events: TaskEvent[] = [];

  constructor(readonly taskId = 'task-test') {}

  async append(event: NewEvent): Promise<TaskEvent> {
    const stored = TaskEvent.parse({ ...event, taskId: this.taskId, seq: this.events.length + 1, ts: new Date().toISOString() });
    this.events.push(stored);
    return stored;
  }

  ofType<T extends EventType>(type: T): Array<TaskEventOf<T>> {
    return this.events.filter((event): event is TaskEventOf<T> => event.type === type);
  }
}
