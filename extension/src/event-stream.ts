import { ServerFrame, type TaskEvent } from '@dockhand/protocol';
import { tokenExpiredText } from './errors';

/*
 * Follows one task's event log over the WebSocket. The server replays everything after the seq we
 * ask for and then sends live events; on any drop we reconnect with backoff from the last seq we
 * delivered, so the consumer sees every event exactly once and in order. Events at or below the
 * last delivered seq are dropped (replay overlap); a jump ahead means we missed something, so we
 * reconnect from where we are rather than deliver a gap.
 */

export interface EventSocket {
  onOpen(listener: () => void): void;
  onMessage(listener: (data: string) => void): void;
  onClose(listener: (code: number, reason: string) => void): void;
  onError(listener: (error: Error) => void): void;
  send(data: string): void;
  close(): void;
}

export type SocketFactory = (url: string, headers: Record<string, string>) => EventSocket;

/** `signed_out`: the server refused the token; the stream waits for a new sign-in (`restart`). */
export type StreamStatus = 'connecting' | 'replaying' | 'live' | 'reconnecting' | 'offline' | 'signed_out';

/** A socket whose upgrade got an HTTP answer closes with 4000 + that status (4401: token refused). */
export const REJECTED_CLOSE_BASE = 4000;

export const SIGNED_OUT_DETAIL = 'The server did not accept your token (unknown or revoked). Run "Dockhand: Sign in".';

export interface EventStreamOptions {
  url(afterSeq: number): string;
  headers(): Promise<Record<string, string>>;
  connect: SocketFactory;
  onEvents(events: TaskEvent[]): void;
  onStatus(status: StreamStatus, detail?: string): void;
  /** Seq already held (e.g. from an earlier session); replay starts after it. */
  afterSeq?: number;
  initialDelayMs?: number;
  maxDelayMs?: number;
  pingIntervalMs?: number;
  /** Test hook; production uses the real clock. */
  setTimer?: (callback: () => void, ms: number) => () => void;
  random?: () => number;
}

/** Server error codes after which retrying cannot help. */
const FATAL_CODES = new Set(['unauthenticated', 'token_expired', 'forbidden', 'not_found']);

export class TaskEventStream {
  private lastSeq: number;
  private socket: EventSocket | undefined;
  private attempt = 0;
  private cancelTimer: (() => void) | undefined;
  private cancelPing: (() => void) | undefined;
  private stopped = false;
  private readonly setTimer: (callback: () => void, ms: number) => () => void;

  constructor(private readonly options: EventStreamOptions) {
    this.lastSeq = options.afterSeq ?? 0;
    this.setTimer =
      options.setTimer ??
      ((callback, ms) => {
        const handle = setTimeout(callback, ms);
        return () => clearTimeout(handle);
      });
  }

  get lastDeliveredSeq(): number {
    return this.lastSeq;
  }

  start(): void {
    this.stopped = false;
    void this.open();
  }

  dispose(): void {
    this.stopped = true;
    this.cancelTimer?.();
    this.cancelPing?.();
    const socket = this.socket;
    this.socket = undefined;
    socket?.close();
  }

  /** Reconnects now (e.g. after signing in again), keeping the position. */
  restart(): void {
    this.dispose();
    this.attempt = 0;
    this.start();
  }

  private async open(): Promise<void> {
    this.options.onStatus(this.attempt === 0 ? 'connecting' : 'reconnecting');
    let headers: Record<string, string>;
    try {
      headers = await this.options.headers();
    } catch {
      // No token: nothing to retry until the developer signs in.
      this.options.onStatus('signed_out', 'Not signed in. Run "Dockhand: Sign in".');
      return;
    }
    if (this.stopped) return;
    let socket: EventSocket;
    try {
      socket = this.options.connect(this.options.url(this.lastSeq), headers);
    } catch (error) {
      this.scheduleReconnect(error instanceof Error ? error.message : String(error));
      return;
    }
    this.socket = socket;
    socket.onOpen(() => {
      if (this.socket !== socket) return;
      this.options.onStatus('replaying');
      this.startPing(socket);
    });
    socket.onMessage((data) => {
      if (this.socket === socket) this.handle(socket, data);
    });
    socket.onError(() => {
      // A close always follows; the reconnect happens there.
    });
    socket.onClose((code, reason) => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      this.cancelPing?.();
      if (this.stopped) return;
      if (code === REJECTED_CLOSE_BASE + 401) return this.stop('signed_out', SIGNED_OUT_DETAIL);
      if (code === REJECTED_CLOSE_BASE + 403) return this.stop('offline', 'The server does not let you follow this task (403).');
      if (code === REJECTED_CLOSE_BASE + 404) return this.stop('offline', 'The server does not know this task (404).');
      this.scheduleReconnect(reason || `connection closed (${code})`);
    });
  }

  private handle(socket: EventSocket, data: string): void {
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      return;
    }
    const frame = ServerFrame.safeParse(json);
    if (!frame.success) return;
    switch (frame.data.kind) {
      case 'event': {
        const event = frame.data.event;
        if (event.seq <= this.lastSeq) return;
        if (event.seq !== this.lastSeq + 1) {
          // Missed something in between: start over from what we have.
          this.drop(socket, `missed events ${this.lastSeq + 1}–${event.seq - 1}`, 0);
          return;
        }
        this.lastSeq = event.seq;
        this.options.onEvents([event]);
        return;
      }
      case 'live':
        this.attempt = 0;
        this.options.onStatus('live');
        return;
      case 'resync':
        this.drop(socket, 'the server asked us to catch up', 0);
        return;
      case 'error': {
        const { code, message } = frame.data.error;
        if (FATAL_CODES.has(code)) {
          this.socket = undefined;
          socket.close();
          const signedOut = code === 'unauthenticated' || code === 'token_expired';
          this.stop(signedOut ? 'signed_out' : 'offline', code === 'token_expired' ? tokenExpiredText(message) : signedOut ? SIGNED_OUT_DETAIL : message);
          return;
        }
        this.drop(socket, message);
        return;
      }
    }
  }

  /** Gives up until `restart`: retrying cannot help (token refused, task unknown or forbidden). */
  private stop(status: StreamStatus, detail: string): void {
    this.stopped = true;
    this.cancelTimer?.();
    this.options.onStatus(status, detail);
  }

  private drop(socket: EventSocket, reason: string, delayMs?: number): void {
    this.socket = undefined;
    this.cancelPing?.();
    socket.close();
    this.scheduleReconnect(reason, delayMs);
  }

  private scheduleReconnect(reason: string, delayMs?: number): void {
    if (this.stopped) return;
    const initial = this.options.initialDelayMs ?? 500;
    const max = this.options.maxDelayMs ?? 15_000;
    const random = this.options.random ?? Math.random;
    // Exponential backoff with jitter so a fleet of clients does not reconnect in lockstep.
    const delay = delayMs ?? Math.min(max, initial * 2 ** this.attempt) * (0.75 + random() * 0.5);
    this.attempt += 1;
    this.options.onStatus('reconnecting', `Lost the event stream (${reason}); reconnecting…`);
    this.cancelTimer?.();
    this.cancelTimer = this.setTimer(() => {
      this.cancelTimer = undefined;
      if (!this.stopped) void this.open();
    }, delay);
  }

  private startPing(socket: EventSocket): void {
    const interval = this.options.pingIntervalMs ?? 25_000;
    const tick = (): void => {
      if (this.socket !== socket) return;
      try {
        socket.send(JSON.stringify({ kind: 'ping' }));
      } catch {
        // The close handler deals with a dead socket.
      }
      this.cancelPing = this.setTimer(tick, interval);
    };
    this.cancelPing?.();
    this.cancelPing = this.setTimer(tick, interval);
  }
}
