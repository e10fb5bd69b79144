import type { TaskEvent } from '@dockhand/protocol';
import { TaskEventStream, type SocketFactory, type StreamStatus } from './event-stream';

/*
 * Keeps the event log of every task the developer has looked at in this window and one live
 * stream per such task. Views (side panel, status bar, changes tree) read from here and are told
 * about new events; none of them owns a socket.
 */

export interface SessionListener {
  onEvents(taskId: string, events: TaskEvent[]): void;
  onStatus(taskId: string, status: StreamStatus, detail?: string): void;
}

export interface TaskSessionsOptions {
  eventsUrl(taskId: string, afterSeq: number): string;
  headers(): Promise<Record<string, string>>;
  connect: SocketFactory;
  /** Events that arrive within this window go to listeners together (keeps the webview calm). */
  batchMs?: number;
}

interface Session {
  events: TaskEvent[];
  stream: TaskEventStream;
  status: StreamStatus;
  detail?: string;
  pending: TaskEvent[];
  flushTimer?: ReturnType<typeof setTimeout>;
}

export class TaskSessions {
  private readonly sessions = new Map<string, Session>();
  private readonly listeners = new Set<SessionListener>();

  constructor(private readonly options: TaskSessionsOptions) {}

  subscribe(listener: SessionListener): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** Starts following a task (idempotent) and returns the events held so far. */
  follow(taskId: string): readonly TaskEvent[] {
    let session = this.sessions.get(taskId);
    if (!session) {
      const created: Session = {
        events: [],
        pending: [],
        status: 'connecting',
        stream: new TaskEventStream({
          url: (after) => this.options.eventsUrl(taskId, after),
          headers: () => this.options.headers(),
          connect: this.options.connect,
          onEvents: (events) => this.receive(taskId, events),
          onStatus: (status, detail) => {
            created.status = status;
            created.detail = detail;
            for (const listener of this.listeners) listener.onStatus(taskId, status, detail);
          },
        }),
      };
      session = created;
      this.sessions.set(taskId, session);
      session.stream.start();
    }
    return session.events;
  }

  events(taskId: string): readonly TaskEvent[] {
    return this.sessions.get(taskId)?.events ?? [];
  }

  status(taskId: string): { status: StreamStatus; detail?: string } | undefined {
    const session = this.sessions.get(taskId);
    return session ? { status: session.status, detail: session.detail } : undefined;
  }

  /** The event with this seq, if held (for "load more" of a clipped output). */
  event(taskId: string, seq: number): TaskEvent | undefined {
    const events = this.sessions.get(taskId)?.events ?? [];
    // Logs start at seq 1 and rise by one, so the index is a direct look-up.
    const guess = events[seq - 1];
    return guess?.seq === seq ? guess : events.find((event) => event.seq === seq);
  }

  /** After signing in again: reconnect every stream, keeping positions. */
  reconnectAll(): void {
    for (const session of this.sessions.values()) session.stream.restart();
  }

  dispose(): void {
    for (const session of this.sessions.values()) {
      if (session.flushTimer) clearTimeout(session.flushTimer);
      session.stream.dispose();
    }
    this.sessions.clear();
    this.listeners.clear();
  }

  private receive(taskId: string, events: TaskEvent[]): void {
    const session = this.sessions.get(taskId);
    if (!session) return;
    session.events.push(...events);
    session.pending.push(...events);
    const batchMs = this.options.batchMs ?? 16;
    if (batchMs <= 0) return this.flush(taskId, session);
    session.flushTimer ??= setTimeout(() => this.flush(taskId, session), batchMs);
  }

  private flush(taskId: string, session: Session): void {
    session.flushTimer = undefined;
    const batch = session.pending;
    session.pending = [];
    if (batch.length === 0) return;
    for (const listener of this.listeners) listener.onEvents(taskId, batch);
  }
}
