import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ServerFrame } from '@dockhand/protocol';
import { harness, type Harness } from './test-support';

let h: Harness;
let base: string;
beforeEach(async () => {
  h = await harness({ deps: { limits: { wsMaxBufferedBytes: 256 * 1024 } } });
  await h.app.listen({ host: '127.0.0.1', port: 0 });
  const address = h.app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  base = `ws://127.0.0.1:${address.port}`;
});
afterEach(async () => { await h.close(); });

function open(url: string, protocols: string[]): Promise<{ ws: WebSocket; frames: ServerFrame[]; closed: Promise<number> }> {
  const ws = new WebSocket(url, protocols);
  const frames: ServerFrame[] = [];
  ws.on('message', (data) => frames.push(ServerFrame.parse(JSON.parse(data.toString()))));
  const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, frames, closed }));
    ws.once('error', reject);
  });
}

async function until(check: () => boolean, ms = 20_000) {
  const end = Date.now() + ms;
  while (!check() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
}

describe('events WebSocket over real sockets', () => {
  it('sends resync to a subscriber that stops reading and drops it, without stalling the task or other subscribers', async () => {
    const task = await h.createTask('alice');
    const url = `${base}/v1/tasks/${task.id}/events`;
    const protocols = ['dockhand.v1', `dockhand.bearer.${h.tokens.alice}`];
    const slow = await open(url, protocols);
    const fast = await open(url, protocols);
    expect(slow.ws.protocol).toBe('dockhand.v1');
    await until(() => slow.frames.some((f) => f.kind === 'live') && fast.frames.some((f) => f.kind === 'live'));
    slow.ws.pause();

    const output = 'x'.repeat(50_000);
    const started = Date.now();
    for (let i = 0; i < 300; i++) {
      await h.events.append(task.id, {
        type: 'tool.finished',
        data: { toolUseId: `tu${i}`, name: 'run_command', isError: false, output, truncated: false, durationMs: 1 },
      });
      // A task does I/O between events; let the sockets drain as they would.
      await new Promise((r) => setTimeout(r, 1));
    }
    const producerMs = Date.now() - started;
    expect(producerMs).toBeLessThan(15_000);
    expect(h.hub.subscriberCount(task.id)).toBe(1);

    await until(() => fast.frames.filter((f) => f.kind === 'event').length === 302);
    slow.ws.resume();
    const code = await slow.closed;
    expect(code).toBe(4008);
    const resync = slow.frames.find((f) => f.kind === 'resync');
    expect(resync).toBeDefined();
    const delivered = slow.frames.flatMap((f) => (f.kind === 'event' ? [f.event.seq] : []));
    expect(resync?.kind === 'resync' && resync.lastDeliveredSeq).toBe(delivered.at(-1));
    expect(delivered.length).toBeLessThan(302);

    // Reconnecting from the last delivered seq gets exactly the rest.
    const again = await open(`${url}?after=${delivered.at(-1)}`, protocols);
    await until(() => again.frames.some((f) => f.kind === 'live'));
    const rest = again.frames.flatMap((f) => (f.kind === 'event' ? [f.event.seq] : []));
    expect([...delivered, ...rest]).toEqual(Array.from({ length: 302 }, (_, i) => i + 1));
    for (const s of [fast, again]) s.ws.close();
  });

  it('accepts the token as ?token= for browsers and refuses a socket with a bad token', async () => {
    const task = await h.createTask('alice');
    const ok = await open(`${base}/v1/tasks/${task.id}/events?token=${h.tokens.alice}`, ['dockhand.v1']);
    await until(() => ok.frames.some((f) => f.kind === 'live'));
    ok.ws.close();
    await expect(open(`${base}/v1/tasks/${task.id}/events?token=dh_bad`, ['dockhand.v1'])).rejects.toThrow(/401/);
  });
});
