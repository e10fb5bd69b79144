import type { TaskEvent } from '@dockhand/protocol';
import { describe, expect, it } from 'vitest';
import { stamp, runUntilApproval } from '../../webview-ui/src/test/recorded-stream';
import { SIGNED_OUT_DETAIL, TaskEventStream, type EventSocket, type StreamStatus } from './event-stream';

/** A socket the test drives by hand. */
class FakeSocket implements EventSocket {
  closed = false;
  sent: string[] = [];
  private listeners: { open?: () => void; message?: (d: string) => void; close?: (c: number, r: string) => void } = {};
  constructor(readonly url: string) {}
  onOpen(l: () => void) { this.listeners.open = l; }
  onMessage(l: (d: string) => void) { this.listeners.message = l; }
  onClose(l: (c: number, r: string) => void) { this.listeners.close = l; }
  onError() {}
  send(data: string) { this.sent.push(data); }
  close() {
    if (this.closed) return;
    this.closed = true;
    this.listeners.close?.(1000, '');
  }
  open() { this.listeners.open?.(); }
  frame(frame: unknown) { this.listeners.message?.(JSON.stringify(frame)); }
  events(events: TaskEvent[]) { for (const event of events) this.frame({ kind: 'event', event }); }
  drop() { this.closed = true; this.listeners.close?.(1006, ''); }
  reject(status: number) { this.closed = true; this.listeners.close?.(4000 + status, `the server answered ${status}`); }
}

function setup() {
  const sockets: FakeSocket[] = [];
  const received: TaskEvent[] = [];
  const statuses: Array<{ status: StreamStatus; detail?: string }> = [];
  const timers: Array<{ ms: number; run: () => void; cancelled: boolean }> = [];
  const stream = new TaskEventStream({
    url: (after) => `ws://server/v1/tasks/t1/events?after=${after}`,
    headers: async () => ({ authorization: 'Bearer x' }),
    connect: (url) => {
      const socket = new FakeSocket(url);
      sockets.push(socket);
      return socket;
    },
    onEvents: (events) => received.push(...events),
    onStatus: (status, detail) => statuses.push({ status, detail }),
    initialDelayMs: 100,
    maxDelayMs: 1000,
    random: () => 0.5,
    setTimer: (run, ms) => {
      const timer = { ms, run, cancelled: false };
      timers.push(timer);
      return () => (timer.cancelled = true);
    },
  });
  /** Fires the pending reconnect timer (not ping timers) and waits for the socket to open. */
  const fireReconnect = async () => {
    const timer = timers.filter((t) => !t.cancelled && t.ms < 25_000).pop();
    if (!timer) throw new Error('no reconnect pending');
    timer.cancelled = true;
    timer.run();
    await flush();
  };
  return { stream, sockets, received, statuses, timers, fireReconnect };
}

const flush = () => new Promise((resolve) => setTimeout(resolve, 0));
const events = stamp('t1', runUntilApproval());

describe('TaskEventStream', () => {
  it('replays, goes live and delivers each event once', async () => {
    const t = setup();
    t.stream.start();
    await flush();
    expect(t.sockets[0]!.url).toBe('ws://server/v1/tasks/t1/events?after=0');
    t.sockets[0]!.open();
    t.sockets[0]!.events(events.slice(0, 5));
    t.sockets[0]!.frame({ kind: 'live', lastSeq: 5 });
    t.sockets[0]!.events(events.slice(3, 8)); // overlap: 4 and 5 again
    expect(t.received.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(t.statuses.map((s) => s.status)).toEqual(['connecting', 'replaying', 'live']);
  });

  it('reconnects after a drop from the last delivered seq, with growing backoff, without gaps or duplicates', async () => {
    const t = setup();
    t.stream.start();
    await flush();
    t.sockets[0]!.open();
    t.sockets[0]!.events(events.slice(0, 6));
    t.sockets[0]!.drop();
    expect(t.statuses.at(-1)).toMatchObject({ status: 'reconnecting' });
    await t.fireReconnect();
    expect(t.sockets[1]!.url).toContain('after=6');
    // The server is down: the socket fails before opening, twice.
    t.sockets[1]!.drop();
    await t.fireReconnect();
    t.sockets[2]!.drop();
    const delays = t.timers.filter((timer) => timer.ms < 25_000).map((timer) => timer.ms);
    expect(delays).toEqual([100, 200, 400]);
    await t.fireReconnect();
    expect(t.sockets[3]!.url).toContain('after=6');
    t.sockets[3]!.open();
    t.sockets[3]!.events(events.slice(4)); // the server replays a little too much
    t.sockets[3]!.frame({ kind: 'live', lastSeq: events.length });
    expect(t.received.map((e) => e.seq)).toEqual(events.map((e) => e.seq));
    // Live again: the backoff starts over.
    t.sockets[3]!.drop();
    expect(t.timers.at(-1)!.ms).toBe(100);
  });

  it('reconnects at once from where it is when events skip ahead or the server asks for a resync', async () => {
    const t = setup();
    t.stream.start();
    await flush();
    t.sockets[0]!.open();
    t.sockets[0]!.events(events.slice(0, 3));
    t.sockets[0]!.events(events.slice(5, 6)); // seq 6 after 3: 4 and 5 are missing
    expect(t.sockets[0]!.closed).toBe(true);
    expect(t.received.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(t.timers.at(-1)!.ms).toBe(0);
    await t.fireReconnect();
    expect(t.sockets[1]!.url).toContain('after=3');
    t.sockets[1]!.open();
    t.sockets[1]!.events(events.slice(3, 7));
    t.sockets[1]!.frame({ kind: 'resync', lastDeliveredSeq: 7 });
    expect(t.sockets[1]!.closed).toBe(true);
    await t.fireReconnect();
    expect(t.sockets[2]!.url).toContain('after=7');
    expect(t.received.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('stops and says why when the server refuses the token; ignores malformed frames', async () => {
    const t = setup();
    t.stream.start();
    await flush();
    t.sockets[0]!.open();
    t.sockets[0]!.frame({ kind: 'event', event: { seq: 'one' } });
    t.sockets[0]!.frame({ kind: 'error', error: { code: 'unauthenticated', message: 'unknown or revoked token' } });
    expect(t.statuses.at(-1)).toEqual({ status: 'signed_out', detail: SIGNED_OUT_DETAIL });
    expect(t.timers.filter((timer) => timer.ms < 25_000 && !timer.cancelled)).toHaveLength(0);
    expect(t.received).toEqual([]);
  });

  it('an expired token stops the stream signed out, saying when it expired and how to get a new one', async () => {
    const t = setup();
    t.stream.start();
    await flush();
    t.sockets[0]!.open();
    t.sockets[0]!.frame({ kind: 'error', error: { code: 'token_expired', message: 'token tok_1 expired on 2026-03-01T09:30:00.000Z' } });
    expect(t.statuses.at(-1)).toEqual({ status: 'signed_out', detail: expect.stringContaining('expired on 2026-03-01 09:30 UTC') });
    expect(t.timers.filter((timer) => timer.ms < 25_000 && !timer.cancelled)).toHaveLength(0);
  });

  it('is signed out, not reconnecting, when the upgrade itself is refused with 401; a sign-in restarts it', async () => {
    const t = setup();
    t.stream.start();
    await flush();
    t.sockets[0]!.reject(401);
    expect(t.statuses.at(-1)).toEqual({ status: 'signed_out', detail: SIGNED_OUT_DETAIL });
    expect(t.statuses.some((s) => s.status === 'reconnecting')).toBe(false);
    expect(t.timers.filter((timer) => !timer.cancelled)).toHaveLength(0);
    t.stream.restart();
    await flush();
    expect(t.sockets).toHaveLength(2);
  });

  it('sends keep-alive pings while open and nothing after dispose', async () => {
    const t = setup();
    t.stream.start();
    await flush();
    t.sockets[0]!.open();
    const ping = t.timers.find((timer) => timer.ms === 25_000)!;
    ping.run();
    expect(t.sockets[0]!.sent).toEqual([JSON.stringify({ kind: 'ping' })]);
    t.stream.dispose();
    expect(t.sockets[0]!.closed).toBe(true);
    expect(t.timers.filter((timer) => timer.ms < 25_000)).toHaveLength(0);
  });
});
