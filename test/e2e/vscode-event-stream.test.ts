import type { TaskEvent } from '@dockhand/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient } from '../../extension/src/api-client';
import type { StreamStatus } from '../../extension/src/event-stream';
import { TaskSessions } from '../../extension/src/task-sessions';
import { connectWebSocket } from '../../extension/src/ws-socket';
import { createFixtureRepo } from '../support/fixture-repo';
import { startRealServer, type RealServer } from '../vscode/real-server';
import { startProxy, type CuttableProxy } from '../vscode/tcp-proxy';

/*
 * The extension's event stream against the real server over real sockets, with the network cut
 * repeatedly while a task runs: the extension must end up with exactly the server's event log,
 * in order, with no gap and no duplicate.
 */

let server: RealServer;
let proxy: CuttableProxy;

beforeAll(async () => {
  server = await startRealServer(createFixtureRepo('buggy-calc'), { stepDelayMs: 120 });
  const url = new URL(server.url);
  proxy = await startProxy({ host: url.hostname, port: Number(url.port) });
});

afterAll(async () => {
  await proxy?.close();
  await server?.close();
});

describe('event stream over a flaky network (real server)', () => {
  it('resumes from the last seq after every cut: no gaps, no duplicates', async () => {
    const api = new ApiClient({ baseUrl: proxy.url, token: async () => server.token });
    const received: TaskEvent[] = [];
    const statuses: StreamStatus[] = [];
    const sessions = new TaskSessions({
      eventsUrl: (taskId, after) => api.eventsUrl(taskId, after),
      headers: () => api.authHeaders(),
      connect: connectWebSocket,
      batchMs: 0,
    });
    sessions.subscribe({ onEvents: (_id, events) => received.push(...events), onStatus: (_id, status) => statuses.push(status) });
    // A slow run: the task's events keep arriving while we cut the connection.
    const repo = server.forgeRepo;
    const baseSha = (await import('node:child_process')).execFileSync('git', ['rev-parse', 'main'], { cwd: repo, encoding: 'utf8' }).trim();
    const taskId = await api.createTask({ ticket: { kind: 'text', title: 'average() ignores the first value' }, context: { repo, baseSha } });
    sessions.follow(taskId);
    const seenAtCut: number[] = [];
    for (let cut = 0; cut < 4; cut += 1) {
      await new Promise((resolve) => setTimeout(resolve, 250 + cut * 60));
      seenAtCut.push(received.length);
      proxy.cut();
    }
    // Wait for the task to reach review, then for the stream to be live again.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const task = await server.fleet.store.getTask(taskId);
      const stored = await server.fleet.store.listEvents(taskId);
      if (task?.state === 'awaiting_review' && received.length >= stored.length && statuses.at(-1) === 'live') break;
      if (Date.now() > deadline) throw new Error(`stream did not catch up: state ${task?.state}, ${received.length}/${stored.length} events, status ${statuses.at(-1)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const stored = await server.fleet.store.listEvents(taskId);
    expect(received.map((e) => e.seq)).toEqual(stored.map((e) => e.seq));
    expect(received).toEqual(stored);
    // The cuts really fell in the middle of the run.
    expect(seenAtCut.filter((n) => n > 0 && n < stored.length).length).toBeGreaterThanOrEqual(3);
    expect(statuses.filter((s) => s === 'reconnecting').length).toBeGreaterThanOrEqual(4);
    expect(proxy.connections()).toBeGreaterThan(2);
    sessions.dispose();
  });
});
