import { describe, expect, it } from 'vitest';
import { sampleTask } from '../../webview-ui/src/test/recorded-stream';
import { ApiClient, type FetchLike } from './api-client';
import { DockhandError } from './errors';

function client(respond: (url: string, init: Parameters<FetchLike>[1]) => { status: number; body?: unknown }, token: string | null = 'tok') {
  const calls: Array<{ url: string; method: string; headers: Record<string, string>; body?: unknown }> = [];
  const api = new ApiClient({
    baseUrl: 'http://dockhand.test:8080/',
    token: async () => token ?? undefined,
    fetch: async (url, init) => {
      calls.push({ url, method: init.method, headers: init.headers, body: init.body ? JSON.parse(init.body) : undefined });
      const { status, body } = respond(url, init);
      return { ok: status < 400, status, text: async () => (body === undefined ? '' : JSON.stringify(body)) };
    },
  });
  return { api, calls };
}

const sha = 'c'.repeat(40);

describe('ApiClient', () => {
  it('sends a validated task with the bearer token and returns its id', async () => {
    const { api, calls } = client(() => ({ status: 202, body: { id: 'task-1' } }));
    const id = await api.createTask({ ticket: { kind: 'text', title: 'Fix paginate' }, context: { repo: '/r', baseSha: sha } });
    expect(id).toBe('task-1');
    expect(calls[0]).toMatchObject({
      url: 'http://dockhand.test:8080/v1/tasks',
      method: 'POST',
      headers: { authorization: 'Bearer tok', 'content-type': 'application/json' },
      body: { ticket: { kind: 'text', title: 'Fix paginate', body: '' }, context: { repo: '/r', baseSha: sha, dirty: false }, priority: 'normal' },
    });
  });

  it('refuses a bad task before sending it, naming the field', async () => {
    const { api, calls } = client(() => ({ status: 202, body: { id: 'x' } }));
    const error = await api.createTask({ ticket: { kind: 'text', title: 'x' }, context: { repo: '/r', baseSha: 'HEAD' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DockhandError);
    expect((error as DockhandError).details.field).toBe('context.baseSha');
    expect(calls).toHaveLength(0);
  });

  it('reads the approvals inbox page by page, following the cursor, and stops at the page limit', async () => {
    const item = (n: number) => ({ approvalId: `apr_${n}`, taskId: `t${n}`, taskTitle: `task ${n}`, taskOwner: 'alice', repo: '/r', kind: 'push', reason: 'review', requestedAt: '2026-11-29T12:00:00Z', canDecide: true });
    const { api, calls } = client((url) => {
      const cursor = new URL(url).searchParams.get('cursor');
      return { status: 200, body: cursor === null ? { approvals: [item(3), item(2)], nextCursor: 'Mg' } : cursor === 'Mg' ? { approvals: [item(1)], nextCursor: 'MQ' } : { approvals: [item(0)], nextCursor: null } };
    });
    const all = await api.listApprovalInbox();
    expect(all.approvals.map((a) => a.approvalId)).toEqual(['apr_3', 'apr_2', 'apr_1', 'apr_0']);
    expect(all.more).toBe(false);
    expect(calls.map((c) => c.url)).toEqual([
      'http://dockhand.test:8080/v1/approvals?state=pending&limit=100',
      'http://dockhand.test:8080/v1/approvals?state=pending&limit=100&cursor=Mg',
      'http://dockhand.test:8080/v1/approvals?state=pending&limit=100&cursor=MQ',
    ]);
    expect(await api.listApprovalInbox(2)).toMatchObject({ more: true });
  });

  it('turns the server error body into a DockhandError with field and hint', async () => {
    const { api } = client(() => ({ status: 400, body: { error: { code: 'bad_request', message: 'must be a full SHA', field: 'context.baseSha', hint: 'push first' } } }));
    const error = (await api.listTasks().catch((e: unknown) => e)) as DockhandError;
    expect(error.code).toBe('bad_request');
    expect(error.describe()).toBe('must be a full SHA (context.baseSha). push first');
  });

  it('maps bare statuses and unreachable servers to plain words', async () => {
    const notFound = client(() => ({ status: 404 }));
    expect(((await notFound.api.getTask('t').catch((e: unknown) => e)) as DockhandError).code).toBe('not_found');
    const down = new ApiClient({ baseUrl: 'http://127.0.0.1:1', token: async () => 't', fetch: async () => Promise.reject(new Error('ECONNREFUSED')) });
    const error = (await down.listTasks().catch((e: unknown) => e)) as DockhandError;
    expect(error.code).toBe('network');
    expect(error.describe()).toContain('Cannot reach the Dockhand server at http://127.0.0.1:1');
  });

  it('rejects a response that does not match the protocol', async () => {
    const { api } = client(() => ({ status: 200, body: { tasks: [{ id: 'x' }] } }));
    const error = (await api.listTasks().catch((e: unknown) => e)) as DockhandError;
    expect(error.code).toBe('bad_response');
  });

  it('accepts the task list wrapped or bare', async () => {
    const task = sampleTask();
    expect(await client(() => ({ status: 200, body: { tasks: [task] } })).api.listTasks()).toEqual([task]);
    expect(await client(() => ({ status: 200, body: [task] })).api.listTasks()).toEqual([task]);
  });

  it('needs a token', async () => {
    const { api, calls } = client(() => ({ status: 200, body: [] }), null);
    const error = (await api.listTasks().catch((e: unknown) => e)) as DockhandError;
    expect(error.code).toBe('not_signed_in');
    expect(calls).toHaveLength(0);
  });

  it('builds the review, approval, message and file requests from the protocol', async () => {
    const { api, calls } = client((url) => ({ status: 200, body: url.includes('/files') ? { path: 'a.js', base: null, after: 'x' } : {} }));
    await api.review('t 1', 'request_changes', [{ path: 'a.js', line: 3, body: 'rename' }], ['b.js']);
    await api.decideApproval('t1', 'ap/1', 'denied');
    await api.sendMessage('t1', 'also page 0');
    expect(await api.getFile('t1', 'src/a b.js')).toEqual({ path: 'a.js', base: null, after: 'x' });
    expect(calls.map((c) => `${c.method} ${c.url.replace('http://dockhand.test:8080', '')}`)).toEqual([
      'POST /v1/tasks/t%201/review',
      'POST /v1/tasks/t1/approvals/ap%2F1',
      'POST /v1/tasks/t1/messages',
      'GET /v1/tasks/t1/files?path=src%2Fa%20b.js',
    ]);
    expect(calls[0]!.body).toEqual({ action: 'request_changes', comments: [{ path: 'a.js', line: 3, body: 'rename' }], rejectedFiles: ['b.js'] });
    expect(calls[1]!.body).toEqual({ decision: 'denied' });
    expect(api.eventsUrl('t1', 41)).toBe('ws://dockhand.test:8080/v1/tasks/t1/events?after=41');
    expect(new ApiClient({ baseUrl: 'https://d.example', token: async () => 't' }).eventsUrl('t', 0)).toBe('wss://d.example/v1/tasks/t/events?after=0');
  });
});

describe('ApiClient.health tells a Dockhand server from anything else at the URL', () => {
  async function listening(handler: (path: string) => { status: number; type: string; body: string }): Promise<{ url: string; close(): Promise<void> }> {
    const { createServer } = await import('node:http');
    const server = createServer((request, response) => {
      const answer = handler(request.url ?? '/');
      response.writeHead(answer.status, { 'content-type': answer.type }).end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    return { url: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
  }

  it('a Dockhand /healthz gives its version', async () => {
    const server = await listening(() => ({ status: 200, type: 'application/json', body: JSON.stringify({ ok: true, service: 'dockhand', version: '0.1.0' }) }));
    try {
      expect(await new ApiClient({ baseUrl: server.url, token: async () => undefined }).health()).toEqual({ ok: true, service: 'dockhand', version: '0.1.0' });
    } finally {
      await server.close();
    }
  });

  it('a web server that answers 200 with a page, or 404, is not Dockhand: refused naming the URL and what it answered', async () => {
    const page = await listening(() => ({ status: 200, type: 'text/html', body: '<html>It works!</html>' }));
    const missing = await listening(() => ({ status: 404, type: 'text/plain', body: 'Not Found' }));
    try {
      const error = await new ApiClient({ baseUrl: page.url, token: async () => undefined }).health().catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'not_dockhand', message: `The server at ${page.url} is not a Dockhand server (GET /healthz answered something other than Dockhand's health answer)` });
      const notFound = await new ApiClient({ baseUrl: missing.url, token: async () => undefined }).health().catch((e: unknown) => e);
      expect(notFound).toMatchObject({ code: 'not_dockhand', message: `The server at ${missing.url} is not a Dockhand server (GET /healthz answered 404)` });
    } finally {
      await page.close();
      await missing.close();
    }
  });

  it('nothing listening is a network error naming the URL', async () => {
    const gone = await listening(() => ({ status: 200, type: 'text/plain', body: '' }));
    await gone.close();
    const error = await new ApiClient({ baseUrl: gone.url, token: async () => undefined }).health().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'network', message: expect.stringContaining(`Cannot reach the Dockhand server at ${gone.url}`) });
  });
});
