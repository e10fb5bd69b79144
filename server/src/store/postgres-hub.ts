import pg from 'pg';
import { z } from 'zod';
import { TaskEvent } from '@dockhand/protocol';
import type { Logger } from '../log';
import { EventHub, type EventListener } from './hub';
import type { PostgresStore } from './postgres';

/** What every append announces on the store's channel (the event itself is read from the store). */
export const EventNotice = z.object({
  taskId: z.string(),
  seq: z.number().int().min(1),
  type: z.string(),
  state: z.string().optional(),
  /** Written by the worker holding the task's lease (under its fence): the task is not up for a claim. */
  held: z.boolean().optional(),
  /** The event itself when it fitted the payload; checked only where it is published. */
  event: z.unknown().optional(),
});
export type EventNotice = z.infer<typeof EventNotice>;

const PAGE = 500;

/**
 * Live events across processes: the hub of an API replica or worker on the Postgres store. Every
 * append NOTIFYs `{taskId, seq, event}` when it commits; this hub LISTENs on its own connection
 * and, for tasks that have subscribers here, publishes the event from the notice when it is the
 * next one — or reads the new events from the store (an event too big for the payload, a gap).
 *
 * Per task it publishes in seq order with no gap and no repeat, whatever the source: an event this
 * process appended itself (published at once, as with SQLite), a notice from another process, or a
 * catch-up read. A notice or event past the next expected seq makes it read the missing ones first.
 * The subscriber protocol is unchanged: subscribe, then read the store, then drop by seq what it
 * already read (the WebSocket route, the approver, steering). Why nothing falls between: notices
 * arrive in commit order and a task's seqs commit in order, so the first notice received after a
 * subscription has a seq no higher than any event committed after it; publishing from that seq on
 * covers everything the subscriber's own read (made after subscribing) cannot have seen.
 *
 * A worker's hub (`heldEvents: false`) LISTENs only to what is written outside a lease (API
 * replicas' submissions, decisions, messages, cancellations): the events a worker writes under its
 * fence go to a channel only client-serving processes hear. What a worker's subscribers (approver,
 * steering) wait for is written outside a lease, and the other events of the task it runs are its
 * own appends, published here as they are made; a gap (a notice past the next seq) is read.
 *
 * When the LISTEN connection drops (Postgres restarted, network cut) notices sent meanwhile are
 * lost: on reconnect every subscribed task is read from its last published seq (from the start
 * when nothing was published yet; subscribers drop what they already have).
 */
export class PostgresEventHub extends EventHub {
  private client: pg.Client | undefined;
  private readonly published = new Map<string, number>();
  private readonly reading = new Map<string, Promise<void>>();
  private readonly noticeListeners = new Set<(notice: EventNotice) => void>();
  private allListeners = 0;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private pingTimer: NodeJS.Timeout | undefined;
  private connected: Promise<void> | undefined;

  constructor(
    private readonly store: PostgresStore,
    private readonly options: { logger?: Logger; reconnectMs?: number; pingMs?: number; heldEvents?: boolean } = {},
  ) {
    super();
  }

  /** Connects and LISTENs; resolves once notices flow. Reconnects by itself after a drop. */
  start(): Promise<void> {
    this.connected ??= this.connect();
    return this.connected;
  }

  get listening(): boolean {
    return this.client !== undefined;
  }

  override subscribe(taskId: string, listener: EventListener): () => void {
    const unsubscribe = super.subscribe(taskId, listener);
    return () => {
      unsubscribe();
      if (this.subscriberCount(taskId) === 0) this.published.delete(taskId);
    };
  }

  override subscribeAll(listener: EventListener): () => void {
    const unsubscribe = super.subscribeAll(listener);
    this.allListeners += 1;
    let active = true;
    return () => {
      if (!active) return;
      active = false;
      this.allListeners -= 1;
      unsubscribe();
    };
  }

  /** Every notice, for any task, without reading the store (the worker's wake-ups and interrupts). */
  onNotice(listener: (notice: EventNotice) => void): () => void {
    this.noticeListeners.add(listener);
    return () => this.noticeListeners.delete(listener);
  }

  /**
   * An event this process appended: published at once when it is the next one of its task, else
   * after a catch-up. Until a notice has set where a newly subscribed task starts, it waits for
   * the notices instead: an earlier event of another process may still be on its way, and only the
   * notices come in commit order.
   */
  override publish(event: TaskEvent): void {
    if (!this.wanted(event.taskId)) return;
    const last = this.published.get(event.taskId);
    if (last === undefined || event.seq <= last) return;
    if (this.reading.has(event.taskId) || event.seq !== last + 1) {
      this.catchUp(event.taskId, event.seq);
      return;
    }
    this.deliver(event);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    clearInterval(this.pingTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
    await Promise.allSettled([...this.reading.values()]);
  }

  /**
   * The channels heard: every event, or (`heldEvents: false`, a worker) only those written outside
   * a lease — one queue either way, so notices of both still arrive in commit order.
   */
  private get channels(): string[] {
    return this.options.heldEvents === false ? [this.store.channel] : [this.store.channel, this.store.heldChannel];
  }

  private wanted(taskId: string): boolean {
    return this.allListeners > 0 || this.subscriberCount(taskId) > 0;
  }

  private deliver(event: TaskEvent): void {
    this.published.set(event.taskId, event.seq);
    super.publish(event);
  }

  /** Reads the task's events after the last published one (up to `target`, or all) and publishes them. */
  private catchUp(taskId: string, target = Number.POSITIVE_INFINITY): void {
    const previous = this.reading.get(taskId) ?? Promise.resolve();
    const next = previous.then(async () => {
      for (;;) {
        if (!this.wanted(taskId) || this.closed) return;
        const from = this.published.get(taskId) ?? (Number.isFinite(target) ? target - 1 : 0);
        if (from >= target) return;
        const events = await this.store.listEvents(taskId, from, PAGE);
        for (const event of events) {
          const last = this.published.get(taskId);
          if (last === undefined || event.seq === last + 1) this.deliver(event);
        }
        if (events.length < PAGE) return;
      }
    }).catch((error: unknown) => {
      this.options.logger?.warn({ err: error, taskId }, 'live events: catch-up read failed; the next notice retries');
    }).finally(() => {
      if (this.reading.get(taskId) === next) this.reading.delete(taskId);
    });
    this.reading.set(taskId, next);
  }

  private onNotification(message: pg.Notification): void {
    if (!this.channels.includes(message.channel) || message.payload === undefined) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(message.payload);
    } catch {
      return;
    }
    const notice = EventNotice.safeParse(parsed);
    if (!notice.success) return;
    for (const listener of this.noticeListeners) listener(notice.data);
    if (!this.wanted(notice.data.taskId)) return;
    const { taskId, seq } = notice.data;
    const last = this.published.get(taskId);
    if (last !== undefined && seq <= last) return;
    // The next event (or the first one since the task was subscribed here), carried by the notice:
    // published as it is; the same rule as a catch-up read from seq - 1, without the read.
    if (notice.data.event !== undefined && !this.reading.has(taskId) && (last === undefined || seq === last + 1)) {
      const event = TaskEvent.safeParse(notice.data.event);
      if (event.success && event.data.taskId === taskId && event.data.seq === seq) {
        this.deliver(event.data);
        return;
      }
    }
    this.catchUp(taskId, seq);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.store.options.url,
      options: `-c search_path=${this.store.options.schema}`,
      keepAlive: true,
      // Names the connection in pg_stat_activity (operators, and the test that cuts it).
      application_name: `dockhand-listen:${this.store.channel}`.slice(0, 63),
      connectionTimeoutMillis: 10_000,
    });
    const lost = (error?: Error) => {
      if (this.client !== client) return;
      this.client = undefined;
      clearInterval(this.pingTimer);
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      if (this.closed) return;
      this.options.logger?.warn({ err: error }, 'live events: LISTEN connection lost; reconnecting');
      this.scheduleReconnect();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (message) => this.onNotification(message));
    await client.connect();
    for (const channel of this.channels) await client.query(`LISTEN ${channel}`);
    if (this.closed) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    // A cut network can leave a socket that never errors: a ping that fails ends it.
    this.pingTimer = setInterval(() => {
      void client.query('SELECT 1').catch((error: unknown) => lost(error instanceof Error ? error : new Error(String(error))));
    }, this.options.pingMs ?? 5_000);
    this.pingTimer.unref();
  }

  private scheduleReconnect(delay = this.options.reconnectMs ?? 500): void {
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => {
      void this.connect()
        .then(() => {
          // Notices sent while we were away are gone: read every subscribed task from where it was.
          for (const taskId of this.subscribedTasks()) this.catchUp(taskId);
        })
        .catch((error: unknown) => {
          this.options.logger?.warn({ err: error }, 'live events: reconnect failed; trying again');
          this.scheduleReconnect(Math.min(delay * 2, 5_000));
        });
    }, delay);
    this.reconnectTimer.unref();
  }

  private subscribedTasks(): string[] {
    return this.subscribedTaskIds();
  }
}
