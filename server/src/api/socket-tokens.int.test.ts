import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ServerFrame } from '@dockhand/protocol';
import { harness, type Harness } from './test-support';

/*
 * Issue #23 item 3: an events socket opened before its token was revoked or expired kept
 * streaming. Real sockets on a listening app over SQLite; each case counts the events that
 * reach the socket after the token stopped holding (must be 0) and reads the close code and reason.
 */

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

async function start(checkMs: number): Promise<{ h: Harness; base: string }> {
  const made = await harness({ deps: { limits: { wsTokenCheckMs: checkMs } } });
  h = made;
  await made.app.listen({ host: '127.0.0.1', port: 0 });
  const address = made.app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { h: made, base: `ws://127.0.0.1:${address.port}` };
}

interface Opened {
  ws: WebSocket;
  frames: ServerFrame[];
  closed: Promise<{ code: number; reason: string; at: number }>;
}

function open(url: string, token: string): Promise<Opened> {
  const ws = new WebSocket(url, ['dockhand.v1', `dockhand.bearer.${token}`]);
  const frames: ServerFrame[] = [];
  ws.on('message', (data) => frames.push(ServerFrame.parse(JSON.parse(data.toString()))));
  const closed = new Promise<{ code: number; reason: string; at: number }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString(), at: Date.now() })));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, frames, closed }));
    ws.once('error', reject);
  });
}

async function until(check: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
}

const eventCount = (socket: Opened) => socket.frames.filter((frame) => frame.kind === 'event').length;

async function appendSome(target: Harness, taskId: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await target.events.append(taskId, { type: 'user.message', data: { from: 'alice', text: `after ${i}` } });
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('events sockets whose token stops holding', () => {
  it('a token revoked over the API closes its socket at once: no event after the revoke, reason "token revoked"', async () => {
    const { h, base } = await start(60_000);
    const { token, info } = await h.store.createToken('alice', 'socket');
    const task = await h.createTask('alice');
    const socket = await open(`${base}/v1/tasks/${task.id}/events`, token);
    await until(() => socket.frames.some((frame) => frame.kind === 'live'));
    const before = eventCount(socket);
    const answer = await h.app.inject({ method: 'DELETE', url: `/v1/tokens/${info.id}`, headers: h.auth('admin') });
    expect(answer.statusCode).toBe(200);
    await appendSome(h, task.id, 5);
    const closed = await socket.closed;
    expect(eventCount(socket) - before).toBe(0);
    expect(closed).toMatchObject({ code: 4401, reason: 'token revoked' });
    const error = socket.frames.find((frame) => frame.kind === 'error');
    expect(error?.kind === 'error' && error.error.message).toContain(`token ${info.id} was revoked`);
  });

  it('a token revoked by another process (straight in the store) closes at the next check', async () => {
    const { h, base } = await start(200);
    const { token, info } = await h.store.createToken('alice', 'socket');
    const task = await h.createTask('alice');
    const socket = await open(`${base}/v1/tasks/${task.id}/events`, token);
    await until(() => socket.frames.some((frame) => frame.kind === 'live'));
    const revokedAt = Date.now();
    await h.store.revokeToken(info.id);
    const closed = await socket.closed;
    expect(closed.reason).toBe('token revoked');
    expect(closed.at - revokedAt).toBeLessThan(2_000);
  });

  it('a client message after a revocation elsewhere is answered by the close, not served', async () => {
    const { h, base } = await start(60_000);
    const { token, info } = await h.store.createToken('alice', 'socket');
    const task = await h.createTask('alice');
    const socket = await open(`${base}/v1/tasks/${task.id}/events`, token);
    await until(() => socket.frames.some((frame) => frame.kind === 'live'));
    await h.store.revokeToken(info.id);
    socket.ws.send(JSON.stringify({ kind: 'ping' }));
    const closed = await socket.closed;
    expect(closed).toMatchObject({ code: 4401, reason: 'token revoked' });
  });

  it('an expiring token closes its socket at the expiry time, reason "token expired"', async () => {
    const { h, base } = await start(60_000);
    const expiresAt = new Date(Date.now() + 1_500).toISOString();
    const { token } = await h.store.createToken('alice', { label: 'short', expiresAt });
    const task = await h.createTask('alice');
    const socket = await open(`${base}/v1/tasks/${task.id}/events`, token);
    await until(() => socket.frames.some((frame) => frame.kind === 'live'));
    const closed = await socket.closed;
    expect(closed).toMatchObject({ code: 4401, reason: 'token expired' });
    expect(closed.at).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    expect(closed.at - Date.parse(expiresAt)).toBeLessThan(1_000);
    const before = eventCount(socket);
    await appendSome(h, task.id, 3);
    expect(eventCount(socket)).toBe(before);
  });
});
