import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { CreateTaskRequest, ReviewRequest, type NewEvent, type Task, type TaskEvent } from '@dockhand/protocol';
import { stamp, turn } from '../../webview-ui/src/test/recorded-stream';

/*
 * A stand-in Dockhand server for the extension's tests: the real HTTP and WebSocket contract
 * (protocol/ schemas, bearer auth, replay after `?after=` then live), with a scripted agent run
 * instead of a sandbox. Used until/unless the real server is available to a test.
 */

export const BASE_CONTENT = `export function paginate(items, page, size) {
  const start = page * size + 1;
  const end = start + size;
  return items.slice(start, end);
}
`;
export const AGENT_CONTENT = BASE_CONTENT.replace('page * size + 1', '(page - 1) * size');
const PATCH = `diff --git a/src/paginate.js b/src/paginate.js
--- a/src/paginate.js
+++ b/src/paginate.js
@@ -1,5 +1,5 @@
 export function paginate(items, page, size) {
-  const start = page * size + 1;
+  const start = (page - 1) * size;
   const end = start + size;
   return items.slice(start, end);
 }
`;

const READINESS_REPORT = {
  repo: 'shop',
  sha: 'c'.repeat(40),
  ready: false,
  install: { ok: true, detail: 'installed 312 packages', seconds: 21 },
  tests: { ok: true, detail: 'the test command reports', command: 'npm test', runner: 'vitest', passed: 88, failed: 1, preExistingFailures: ['test/dates.test.ts > parses ISO weeks'] },
  selection: { ok: false, detail: 'no test imports src/legacy/', action: 'Add tests for src/legacy/ or list it in .dockhand/environment.yml' },
  blocking: [{ problem: 'Test selection misses src/legacy/', action: 'Add tests for src/legacy/ or list it in .dockhand/environment.yml' }],
};

interface FakeTask {
  task: Task;
  events: TaskEvent[];
  sockets: Set<WebSocket>;
}

export interface FakeServer {
  url: string;
  token: string;
  requests: Array<{ method: string; path: string; body: unknown }>;
  tasks: Map<string, FakeTask>;
  /** Drops every event socket (to test reconnection). */
  dropSockets(): void;
  close(): Promise<void>;
}

function agentRun(): NewEvent[] {
  return [
    { type: 'task.state', data: { state: 'provisioning' } },
    { type: 'sandbox.ready', data: { sandboxId: 'sb-1', image: 'dockhand/snap:1', baseSha: 'a'.repeat(40), source: 'warm_pool', startMs: 380 } },
    { type: 'task.state', data: { state: 'running' } },
    { type: 'model.turn', data: turn(1, 0.021) },
    { type: 'assistant.text', data: { turn: 1, text: 'Reading paginate() to find the off-by-one.' } },
    { type: 'tool.called', data: { turn: 1, toolUseId: 'tu_1', name: 'read_file', input: { path: 'src/paginate.js' } } },
    { type: 'tool.finished', data: { toolUseId: 'tu_1', name: 'read_file', isError: false, output: BASE_CONTENT, truncated: false, durationMs: 30 } },
    { type: 'model.turn', data: turn(2, 0.019) },
    { type: 'tool.called', data: { turn: 2, toolUseId: 'tu_2', name: 'edit_file', input: { path: 'src/paginate.js', old: 'page * size + 1', new: '(page - 1) * size' } } },
    { type: 'tool.finished', data: { toolUseId: 'tu_2', name: 'edit_file', isError: false, output: 'Replaced 1 occurrence.', truncated: false, durationMs: 11 } },
    { type: 'file.changed', data: { path: 'src/paginate.js', change: 'modified', patch: PATCH } },
    { type: 'tests.finished', data: { command: 'npm test', scope: 'selected', passed: 6, failed: 0, skipped: 0, ok: true, quarantined: [], output: '6 passed', durationMs: 1400 } },
    { type: 'task.state', data: { state: 'verifying' } },
    { type: 'review.finished', data: { approved: true, problems: [], summary: 'Fixes the off-by-one in paginate().' } },
    { type: 'policy.checked', data: { ok: true, stage: 'review', violations: [] } },
    { type: 'task.state', data: { state: 'awaiting_review' } },
  ];
}

export async function startFakeServer(options: { stepMs?: number; token?: string } = {}): Promise<FakeServer> {
  const token = options.token ?? 'dh_test_token';
  const stepMs = options.stepMs ?? 150;
  const tasks = new Map<string, FakeTask>();
  const requests: FakeServer['requests'] = [];
  let counter = 0;

  const append = (entry: FakeTask, events: NewEvent[]): void => {
    for (const event of stamp(entry.task.id, events, entry.events.length + 1, Date.now())) {
      entry.events.push(event);
      entry.task.lastSeq = event.seq;
      if (event.type === 'task.state') entry.task.state = event.data.state;
      if (event.type === 'model.turn') {
        entry.task.usage.turns = event.data.turn;
        entry.task.usage.costUsd += event.data.costUsd;
      }
      if (event.type === 'pr.opened') entry.task.prUrl = event.data.url;
      for (const socket of entry.sockets) socket.send(JSON.stringify({ kind: 'event', event }));
    }
  };
  const play = (entry: FakeTask, events: NewEvent[]): void => {
    events.forEach((event, index) => setTimeout(() => append(entry, [event]), stepMs * (index + 1)));
  };

  const send = (response: ServerResponse, status: number, body: unknown): void => {
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  const error = (response: ServerResponse, status: number, code: string, message: string, field?: string): void =>
    send(response, status, { error: { code, message, ...(field ? { field } : {}) } });

  // The readiness route as protocol/src/repos.ts has it: POST starts a check (202, running), GET
  // reads it; this one is done on the third read, with stages on the way.
  const checks = new Map<string, { reads: number; startedAt: string }>();
  const readiness = (method: string, repo: string, response: ServerResponse): void => {
    if (repo !== 'shop') return error(response, 404, 'not_found', `no registered repository ${repo}`);
    if (method === 'POST') checks.set(repo, { reads: 0, startedAt: new Date().toISOString() });
    const entry = checks.get(repo);
    if (!entry) return error(response, 404, 'not_found', `no readiness check of ${repo} has run on this server`);
    entry.reads += method === 'GET' ? 1 : 0;
    const stages = ['mirror', 'snapshot', 'baseline'].slice(0, entry.reads + 1).map((stage, index) => ({ stage, elapsedMs: 1000 * (index + 1), line: `${stage}…` }));
    const done = entry.reads >= 2;
    send(response, method === 'POST' ? 202 : 200, {
      repo,
      sha: 'c'.repeat(40),
      state: done ? 'done' : 'running',
      startedAt: entry.startedAt,
      progress: stages,
      ...(done ? { finishedAt: new Date().toISOString(), report: READINESS_REPORT } : {}),
    });
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString();
    const body: unknown = text ? JSON.parse(text) : undefined;
    requests.push({ method: request.method ?? 'GET', path: url.pathname + url.search, body });
    if (url.pathname === '/healthz') return send(response, 200, { ok: true, service: 'dockhand', version: '0.1.0' });
    if (request.headers.authorization !== `Bearer ${token}`) return error(response, 401, 'unauthenticated', 'unknown or revoked token');
    const parts = url.pathname.split('/').filter(Boolean);
    if (request.method === 'GET' && url.pathname === '/v1/tickets') {
      return send(response, 200, { tickets: [{ id: '42', title: 'paginate() skips the first item of every page', body: 'Page 1 starts at item 2.', url: 'https://forge.example/acme/app/issues/42' }] });
    }
    if (request.method === 'POST' && url.pathname === '/v1/tasks') {
      const parsed = CreateTaskRequest.safeParse(body);
      if (!parsed.success) return error(response, 400, 'bad_request', parsed.error.issues[0]?.message ?? 'invalid', parsed.error.issues[0]?.path.join('.'));
      counter += 1;
      const id = `task-${counter}`;
      const now = new Date().toISOString();
      const entry: FakeTask = {
        task: {
          id,
          owner: 'dev@example.com',
          state: 'queued',
          ticket: parsed.data.ticket,
          context: parsed.data.context,
          budgets: { maxTurns: 40, maxCostUsd: 5, maxWallClockSeconds: 1800, ...parsed.data.budgets },
          priority: parsed.data.priority,
          allowTestEdits: parsed.data.allowTestEdits,
          usage: { turns: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 },
          lastSeq: 0,
          createdAt: now,
          updatedAt: now,
        },
        events: [],
        sockets: new Set(),
      };
      tasks.set(id, entry);
      append(entry, [{ type: 'task.created', data: { ...parsed.data, owner: 'dev@example.com' } }, { type: 'task.state', data: { state: 'queued' } }]);
      play(entry, agentRun());
      return send(response, 202, { id });
    }
    if (request.method === 'GET' && url.pathname === '/v1/tasks') return send(response, 200, { tasks: [...tasks.values()].map((t) => t.task) });
    if (request.method === 'GET' && url.pathname === '/v1/me') return send(response, 200, { name: 'dev@example.com', role: 'user' });
    const check = /^\/v1\/repos\/(.+)\/check$/.exec(url.pathname);
    if (check) return readiness(request.method ?? 'GET', decodeURIComponent(check[1]!), response);
    const entry = parts[0] === 'v1' && parts[1] === 'tasks' && parts[2] ? tasks.get(parts[2]) : undefined;
    if (!entry) return error(response, 404, 'not_found', 'no such task');
    const action = parts[3];
    if (request.method === 'GET' && !action) return send(response, 200, entry.task);
    if (request.method === 'GET' && action === 'diff') return send(response, 200, { baseSha: entry.task.context.baseSha, diff: PATCH, files: [{ path: 'src/paginate.js', change: 'modified' }] });
    if (request.method === 'GET' && action === 'files') {
      const path = url.searchParams.get('path');
      if (path !== 'src/paginate.js') return error(response, 404, 'not_found', `the task did not change ${path}`, 'path');
      return send(response, 200, { path, base: BASE_CONTENT, after: AGENT_CONTENT });
    }
    if (request.method === 'POST' && action === 'interrupt') {
      append(entry, [{ type: 'task.state', data: { state: 'cancelled', reason: 'interrupted by dev@example.com' } }]);
      return send(response, 202, entry.task);
    }
    if (request.method === 'POST' && action === 'messages') {
      append(entry, [{ type: 'user.message', data: { from: 'dev@example.com', text: String(Reflect.get(Object(body), 'text')) } }]);
      return send(response, 202, { seq: entry.task.lastSeq });
    }
    if (request.method === 'POST' && action === 'review') {
      const review = ReviewRequest.safeParse(body);
      if (!review.success) return error(response, 400, 'bad_request', 'invalid review', 'action');
      if (entry.task.state !== 'awaiting_review') return error(response, 409, 'conflict', `the task is ${entry.task.state}, not awaiting review`);
      if (review.data.action === 'approve') {
        play(entry, [
          { type: 'task.state', data: { state: 'pushing' } },
          { type: 'policy.checked', data: { ok: true, stage: 'push', violations: [] } },
          { type: 'pr.opened', data: { number: 7, url: 'https://forge.example/acme/app/pull/7', branch: 'dockhand/42-paginate', headSha: 'b'.repeat(40) } },
          { type: 'task.state', data: { state: 'pr_open' } },
        ]);
      } else if (review.data.action === 'request_changes') {
        append(entry, [{ type: 'review.requested_changes', data: { by: 'dev@example.com', comments: review.data.comments } }]);
      } else {
        append(entry, [{ type: 'task.state', data: { state: 'closed', reason: 'rejected' } }]);
      }
      return send(response, 200, entry.task);
    }
    return error(response, 404, 'not_found', `no route ${request.method} ${url.pathname}`);
  };

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((failure: unknown) => error(response, 500, 'internal', String(failure)));
  });
  const sockets = new WebSocketServer({ noServer: true });
  server.on('upgrade', (request, socket, head) => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const match = /^\/v1\/tasks\/([^/]+)\/events$/.exec(url.pathname);
    const entry = match ? tasks.get(decodeURIComponent(match[1]!)) : undefined;
    if (!entry || request.headers.authorization !== `Bearer ${token}`) {
      socket.end('HTTP/1.1 401 Unauthorized\r\n\r\n');
      return;
    }
    sockets.handleUpgrade(request, socket, head, (ws) => {
      const after = Number(url.searchParams.get('after') ?? '0');
      for (const event of entry.events) if (event.seq > after) ws.send(JSON.stringify({ kind: 'event', event }));
      ws.send(JSON.stringify({ kind: 'live', lastSeq: entry.task.lastSeq }));
      entry.sockets.add(ws);
      ws.on('close', () => entry.sockets.delete(ws));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    requests,
    tasks,
    dropSockets: () => {
      for (const entry of tasks.values()) for (const socket of entry.sockets) socket.terminate();
    },
    close: async () => {
      for (const client of sockets.clients) client.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
