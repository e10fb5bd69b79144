import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorBody, ServerFrame, Task, TaskListResponse, type TaskEvent } from '@dockhand/protocol';
import { secretFormats } from '../policy/testing/secret-formats';
import { harness, taskBody, type Harness } from './test-support';

let h: Harness;
beforeEach(async () => { h = await harness(); });
afterEach(async () => { await h.close(); });

function errorOf(body: string) {
  return ErrorBody.parse(JSON.parse(body)).error;
}

describe('tasks API', () => {
  it('accepts a task with 202, stores it queued with task.created, and wakes the scheduler', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/v1/tasks', headers: h.auth('alice'), payload: h.submitBody() });
    expect(res.statusCode).toBe(202);
    const { id } = JSON.parse(res.body);
    const task = Task.parse(JSON.parse((await h.app.inject({ url: `/v1/tasks/${id}`, headers: h.auth('alice') })).body));
    expect(task).toMatchObject({ owner: 'alice', state: 'queued', lastSeq: 2 });
    expect((await h.store.listEvents(id)).map((e) => e.type)).toEqual(['task.created', 'task.state']);
    expect(h.control.wakes).toBe(1);
  });

  it('masks secrets pasted into the ticket and the selection before the task is stored', async () => {
    const [pat, aws] = [secretFormats(7).find((f) => f.rule === 'github-pat'), secretFormats(7).find((f) => f.rule === 'aws-access-token')].map((f) => f?.make());
    if (!pat || !aws) throw new Error('formats');
    const payload = h.submitBody({
      ticket: { kind: 'issue', id: '3', title: `Rotate ${pat.secret}`, body: `The old key: ${aws.line}` },
      context: { repo: 'app', baseSha: h.repo.sha, selection: { path: 'src/a.ts', startLine: 1, endLine: 1, text: pat.line } },
    });
    const res = await h.app.inject({ method: 'POST', url: '/v1/tasks', headers: h.auth('alice'), payload });
    expect(res.statusCode, res.body).toBe(202);
    const { id } = JSON.parse(res.body);
    const answers = (await h.app.inject({ url: `/v1/tasks/${id}`, headers: h.auth('alice') })).body + JSON.stringify(await h.store.listEvents(id));
    for (const secret of [pat.secret, aws.secret]) expect(answers.includes(secret)).toBe(false);
    const task = Task.parse(JSON.parse((await h.app.inject({ url: `/v1/tasks/${id}`, headers: h.auth('alice') })).body));
    expect(task.ticket.title).toMatch(/^Rotate \[secret:github-pat …[A-Za-z0-9]{4}\]$/);
    expect(task.ticket.body).toContain('[secret:aws-access-token');
    expect(task.context.selection?.text).toContain('[secret:github-pat');
  });

  it('names the bad field in a validation error', async () => {
    const res = await h.app.inject({
      method: 'POST', url: '/v1/tasks', headers: h.auth('alice'),
      payload: taskBody({ context: { repo: 'r', baseSha: 'main' } }),
    });
    expect(res.statusCode).toBe(400);
    const error = errorOf(res.body);
    expect(error).toMatchObject({ code: 'bad_request', field: 'context.baseSha' });
    expect(error.message).toMatch(/40-character/);
    expect(error.hint).toBeTruthy();
    const review = await h.app.inject({
      method: 'POST', url: `/v1/tasks/${(await h.createTask('alice')).id}/review`, headers: h.auth('alice'),
      payload: { action: 'approve', comments: [{ body: 'ok' }, { body: '' }] },
    });
    expect(errorOf(review.body).field).toBe('comments[1].body');
  });

  it('refuses requests without a valid token (401)', async () => {
    expect((await h.app.inject({ url: '/v1/tasks' })).statusCode).toBe(401);
    const bad = await h.app.inject({ url: '/v1/tasks', headers: { authorization: 'Bearer dh_nope' } });
    expect(bad.statusCode).toBe(401);
    expect(errorOf(bad.body).code).toBe('unauthenticated');
  });

  it('user B cannot read, steer, interrupt, approve or review user A\'s task: 404 as if it did not exist', async () => {
    const task = await h.createTask('alice');
    const { approval } = await h.store.requestApproval(task.id, { kind: 'command', reason: 'rm', command: 'rm -rf x' });
    const attempts = [
      { method: 'GET' as const, url: `/v1/tasks/${task.id}` },
      { method: 'GET' as const, url: `/v1/tasks/${task.id}/diff` },
      { method: 'GET' as const, url: `/v1/tasks/${task.id}/events` },
      { method: 'POST' as const, url: `/v1/tasks/${task.id}/messages`, payload: { text: 'do evil' } },
      { method: 'POST' as const, url: `/v1/tasks/${task.id}/interrupt` },
      { method: 'POST' as const, url: `/v1/tasks/${task.id}/approvals/${approval.id}`, payload: { decision: 'approved' } },
      { method: 'POST' as const, url: `/v1/tasks/${task.id}/review`, payload: { action: 'approve' } },
    ];
    for (const attempt of attempts) {
      const res = await h.app.inject({ ...attempt, headers: h.auth('bob') });
      expect(res.statusCode, attempt.url).toBe(404);
      const missing = await h.app.inject({ ...attempt, url: attempt.url.replace(task.id, 't_missing'), headers: h.auth('bob') });
      expect(res.body).toBe(missing.body.replace('t_missing', task.id));
    }
    expect((await h.store.getApproval(approval.id))?.state).toBe('pending');
    expect((await h.store.getTask(task.id))?.state).toBe('queued');
    expect((await h.store.listEvents(task.id)).some((e) => e.type === 'user.message')).toBe(false);
    const list = TaskListResponse.parse(JSON.parse((await h.app.inject({ url: '/v1/tasks', headers: h.auth('bob') })).body));
    expect(list.tasks).toEqual([]);
    const admin = await h.app.inject({ url: `/v1/tasks/${task.id}`, headers: h.auth('admin') });
    expect(admin.statusCode).toBe(200);
  });

  it('lists own tasks with filters and cursor paging; admins see all', async () => {
    for (let i = 0; i < 3; i++) await h.createTask('alice');
    await h.createTask('bob', { context: { repo: '/srv/other.git', baseSha: 'b'.repeat(40) } });
    const page1 = TaskListResponse.parse(JSON.parse((await h.app.inject({ url: '/v1/tasks?limit=2', headers: h.auth('alice') })).body));
    expect(page1.tasks).toHaveLength(2);
    const page2 = TaskListResponse.parse(JSON.parse((await h.app.inject({ url: `/v1/tasks?limit=2&cursor=${page1.nextCursor}`, headers: h.auth('alice') })).body));
    expect(page2.tasks).toHaveLength(1);
    expect(page2.nextCursor ?? null).toBeNull();
    const all = TaskListResponse.parse(JSON.parse((await h.app.inject({ url: '/v1/tasks', headers: h.auth('admin') })).body));
    expect(all.tasks).toHaveLength(4);
    const byRepo = TaskListResponse.parse(JSON.parse((await h.app.inject({ url: '/v1/tasks?repo=/srv/other.git', headers: h.auth('admin') })).body));
    expect(byRepo.tasks.map((t) => t.owner)).toEqual(['bob']);
    const badState = await h.app.inject({ url: '/v1/tasks?state=sleeping', headers: h.auth('alice') });
    expect(errorOf(badState.body).field).toBe('state');
  });

  it('steers with a user.message recorded on arrival (a finished diff goes back to running); interrupt cancels', async () => {
    const task = await h.createTask('alice');
    const steer = await h.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/messages`, headers: h.auth('alice'), payload: { text: 'use the helper in utils.ts' } });
    expect(steer.statusCode).toBe(202);
    expect(JSON.parse(steer.body)).toEqual({ seq: 3 });
    expect((await h.store.listEvents(task.id)).at(-1)).toMatchObject({ type: 'user.message', data: { from: 'alice', text: 'use the helper in utils.ts' } });
    await h.events.append(task.id, { type: 'task.state', data: { state: 'awaiting_review' } });
    const more = await h.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/messages`, headers: h.auth('alice'), payload: { text: 'also rename it' } });
    expect(more.statusCode).toBe(202);
    const events = await h.store.listEvents(task.id);
    expect(events.at(-2)).toMatchObject({ type: 'user.message', data: { from: 'alice', text: 'also rename it' } });
    expect(events.at(-1)).toMatchObject({ type: 'task.state', data: { state: 'running' } });
    const stop = await h.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/interrupt`, headers: h.auth('alice') });
    expect(stop.statusCode).toBe(202);
    expect(Task.parse(JSON.parse(stop.body)).state).toBe('cancelled');
    expect(h.control.interrupted).toEqual([task.id]);
    const again = await h.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/interrupt`, headers: h.auth('alice') });
    expect(again.statusCode).toBe(409);
    const late = await h.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/messages`, headers: h.auth('alice'), payload: { text: 'x' } });
    expect(late.statusCode).toBe(409);
  });

  it('resolves a command approval once', async () => {
    const task = await h.createTask('alice');
    const { approval } = await h.store.requestApproval(task.id, { kind: 'command', reason: 'destructive', command: 'rm -rf build' });
    const url = `/v1/tasks/${task.id}/approvals/${approval.id}`;
    const ok = await h.app.inject({ method: 'POST', url, headers: h.auth('alice'), payload: { decision: 'denied', comment: 'no' } });
    expect(ok.statusCode).toBe(200);
    expect(JSON.parse(ok.body)).toMatchObject({ state: 'denied', decidedBy: 'alice' });
    const twice = await h.app.inject({ method: 'POST', url, headers: h.auth('alice'), payload: { decision: 'approved' } });
    expect(twice.statusCode).toBe(409);
  });

  it('review: request_changes sends the comments back and resumes; approve moves to pushing', async () => {
    const task = await h.createTask('alice');
    await h.events.append(task.id, { type: 'task.state', data: { state: 'awaiting_review' } });
    const changes = await h.app.inject({
      method: 'POST', url: `/v1/tasks/${task.id}/review`, headers: h.auth('alice'),
      payload: { action: 'request_changes', comments: [{ path: 'src/a.ts', line: 2, body: 'use a const' }] },
    });
    expect(changes.statusCode).toBe(200);
    expect(Task.parse(JSON.parse(changes.body)).state).toBe('running');
    const log = await h.store.listEvents(task.id);
    const message = log.find((e) => e.type === 'user.message');
    expect(message?.type === 'user.message' && message.data.text).toContain('src/a.ts:2: use a const');
    const notNow = await h.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/review`, headers: h.auth('alice'), payload: { action: 'approve' } });
    expect(notNow.statusCode).toBe(409);
    await h.events.append(task.id, { type: 'task.state', data: { state: 'awaiting_review' } });
    const approve = await h.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/review`, headers: h.auth('alice'), payload: { action: 'approve' } });
    expect(Task.parse(JSON.parse(approve.body)).state).toBe('pushing');
  });

  it('needs the configured number of distinct approvers before pushing', async () => {
    await h.close();
    h = await harness({ deps: { requiredApprovals: async () => 2 } });
    const task = await h.createTask('alice');
    await h.events.append(task.id, { type: 'task.state', data: { state: 'awaiting_review' } });
    const first = await h.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/review`, headers: h.auth('alice'), payload: { action: 'approve' } });
    expect(Task.parse(JSON.parse(first.body)).state).toBe('awaiting_review');
    const again = await h.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/review`, headers: h.auth('alice'), payload: { action: 'approve' } });
    expect(Task.parse(JSON.parse(again.body)).state).toBe('awaiting_review');
    const second = await h.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/review`, headers: h.auth('admin'), payload: { action: 'approve' } });
    expect(Task.parse(JSON.parse(second.body)).state).toBe('pushing');
  });

  it('serves the diff and base/after contents of a file', async () => {
    const task = await h.createTask('alice');
    const diff = ['diff --git a/src/a.ts b/src/a.ts', '--- a/src/a.ts', '+++ b/src/a.ts', '@@ -1,3 +1,3 @@', ' one', '-two', '+TWO', ' three', ''].join('\n');
    await h.store.setResult(task.id, { diff, summary: 's' });
    const res = JSON.parse((await h.app.inject({ url: `/v1/tasks/${task.id}/diff`, headers: h.auth('alice') })).body);
    expect(res.files).toEqual([{ path: 'src/a.ts', change: 'modified' }]);
    const file = JSON.parse((await h.app.inject({ url: `/v1/tasks/${task.id}/files?path=src/a.ts`, headers: h.auth('alice') })).body);
    expect(file).toEqual({ path: 'src/a.ts', base: 'one\ntwo\nthree\n', after: 'one\nTWO\nthree\n' });
    const escape = await h.app.inject({ url: `/v1/tasks/${task.id}/files?path=../etc/passwd`, headers: h.auth('alice') });
    expect(errorOf(escape.body).field).toBe('path');
  });

  it('rate-limits per user', async () => {
    await h.close();
    h = await harness({ deps: { limits: { ratePerMinute: 3 } } });
    const codes: number[] = [];
    for (let i = 0; i < 4; i++) codes.push((await h.app.inject({ url: '/v1/tasks', headers: h.auth('alice') })).statusCode);
    expect(codes).toEqual([200, 200, 200, 429]);
    expect((await h.app.inject({ url: '/v1/tasks', headers: h.auth('bob') })).statusCode).toBe(200);
  });

  it('serves OpenAPI, health, readiness and metrics', async () => {
    const doc = JSON.parse((await h.app.inject({ url: '/docs/json' })).body);
    expect(Object.keys(doc.paths)).toContain('/v1/tasks');
    expect(Object.keys(doc.paths)).toContain('/v1/approvals');
    expect((await h.app.inject({ url: '/healthz' })).statusCode).toBe(200);
    expect(JSON.parse((await h.app.inject({ url: '/readyz' })).body)).toMatchObject({ ok: true, checks: { store: 'ok' } });
    const task = await h.createTask('alice');
    await h.events.append(task.id, {
      type: 'model.turn',
      data: { turn: 1, model: 'claude-x', costUsd: 0.2, stopReason: 'tool_use', contextTokens: 1, content: [], usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 90, cacheWriteTokens: 0 } },
    });
    await h.events.append(task.id, { type: 'pr.opened', data: { number: 1, url: 'dockhand-local://r/pulls/1', branch: 'b', headSha: 'c'.repeat(40) } });
    await h.events.append(task.id, { type: 'pr.outcome', data: { outcome: 'merged', at: new Date().toISOString() } });
    const text = (await h.app.inject({ url: '/metrics', headers: h.auth('admin') })).body;
    // The task's repo is not registered: its label is the one fixed value, never the raw input.
    expect(text).toContain('dockhand_merge_rate{repo="(unregistered)",model="claude-x"} 1');
    expect(text).toContain('dockhand_cache_read_share{repo="(unregistered)",model="claude-x"} 0.9');
    expect(text).not.toContain('/srv/repos/app.git');
    expect((await h.app.inject({ url: '/metrics' })).statusCode).toBe(401);
  });

  it('lists tickets only of a registered repository the caller may submit to', async () => {
    await h.close();
    const asked: string[] = [];
    h = await harness({ deps: { tickets: { listOpenIssues: async (repo: string) => (asked.push(repo), []) } } });
    const app = await h.store.getRepo('app');
    if (!app) throw new Error('the harness registers app');
    await h.store.putRepo({ ...app, name: 'private', submitters: ['alice'] });
    expect((await h.app.inject({ url: '/v1/tickets?repo=private', headers: h.auth('alice') })).statusCode).toBe(200);
    for (const repo of ['private', '/etc', h.repo.path, '../../etc/passwd']) {
      const answer = await h.app.inject({ url: `/v1/tickets?repo=${encodeURIComponent(repo)}`, headers: h.auth('bob') });
      expect(answer.statusCode, repo).toBe(404);
      expect(JSON.parse(answer.body).error).toMatchObject({ code: 'not_found', field: 'repo' });
    }
    expect(asked).toEqual(['private']);
  });

  it('answers a ticket listing on a server without a forge with 503 and what to do, not an internal error', async () => {
    const answer = await h.app.inject({ url: '/v1/tickets?repo=app', headers: h.auth('alice') });
    expect(answer.statusCode).toBe(503);
    expect(JSON.parse(answer.body).error).toMatchObject({ code: 'repository_unavailable', message: 'this server has no forge to list issues from' });
    expect(JSON.parse(answer.body).error.hint).toContain('send the ticket as text');
  });

  it('answers the router errors (bad percent-encoding, a long id) with the API error body', async () => {
    const bad = await h.app.inject({ url: '/v1/tasks/%FF%FE', headers: h.auth('alice') });
    expect(bad.statusCode).toBe(400);
    expect(JSON.parse(bad.body).error).toMatchObject({ code: 'bad_request', field: 'path' });
    const long = await h.app.inject({ url: `/v1/tasks/${'x'.repeat(300)}`, headers: h.auth('alice') });
    expect(long.statusCode).toBe(400);
    expect(JSON.parse(long.body).error).toMatchObject({ code: 'bad_request', field: 'id' });
  });

  it('answers requests the HTTP parser refuses (a URL past the header limit, broken HTTP) with the API error body', async () => {
    const url = await h.app.listen({ host: '127.0.0.1', port: 0 });
    const long = await fetch(`${url}/v1/tasks/${'x'.repeat(20_000)}`, { headers: h.auth('alice') });
    expect(long.status).toBe(400);
    expect(ErrorBody.parse(await long.json()).error).toMatchObject({ code: 'bad_request', field: 'headers', message: expect.stringContaining('larger than this server reads') });
    const { port } = new URL(url);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4)).error).toMatchObject({ code: 'bad_request', hint: 'send a well-formed HTTP/1.1 request' });
  });

  it('scopes metrics to the caller (admins see all) and labels only registered repositories', async () => {
    await h.createTask('alice', { context: { repo: 'app', baseSha: 'a'.repeat(40) } });
    await h.createTask('alice', { context: { repo: 'app', baseSha: 'a'.repeat(40) } });
    await h.createTask('bob', { context: { repo: 'app', baseSha: 'a'.repeat(40) } });
    const tasksOf = async (user: 'alice' | 'bob' | 'admin') => {
      const groups: Array<{ repo: string; tasks: number }> = JSON.parse((await h.app.inject({ url: '/v1/metrics', headers: h.auth(user) })).body).groups;
      return groups.map((group) => `${group.repo}:${group.tasks}`);
    };
    expect(await tasksOf('alice')).toEqual(['app:2']);
    expect(await tasksOf('bob')).toEqual(['app:1']);
    expect(await tasksOf('admin')).toEqual(['app:3']);
    expect((await h.app.inject({ url: '/metrics', headers: h.auth('bob') })).body).toContain('dockhand_tasks{repo="app",model="none",state="queued"} 1');
  });
});

describe('flaky-test quarantine', () => {
  it('lists a repo\'s quarantined tests for anyone who may see it; only admins clear them', async () => {
    await h.store.flaky.quarantine('app', 'test/a.test.js > flips', [
      { testId: 'test/a.test.js > flips', diffHash: 'h', outcome: 'failed', at: '2026-11-29T00:00:00Z' },
      { testId: 'test/a.test.js > flips', diffHash: 'h', outcome: 'passed', at: '2026-11-29T00:00:01Z' },
    ]);
    const list = JSON.parse((await h.app.inject({ url: '/v1/flaky?repo=app', headers: h.auth('bob') })).body);
    expect(list.tests.map((t: { testId: string }) => t.testId)).toEqual(['test/a.test.js > flips']);
    const denied = await h.app.inject({ method: 'DELETE', url: '/v1/flaky?repo=app', headers: h.auth('bob') });
    expect(denied.statusCode).toBe(403);
    const cleared = await h.app.inject({ method: 'DELETE', url: '/v1/flaky?repo=app', headers: h.auth('admin') });
    expect(JSON.parse(cleared.body)).toEqual({ cleared: 1 });
  });
});

describe('events WebSocket', () => {
  function collect(ws: import('ws').WebSocket) {
    const frames: ServerFrame[] = [];
    ws.on('message', (data) => frames.push(ServerFrame.parse(JSON.parse(data.toString()))));
    return frames;
  }
  async function until(check: () => boolean) {
    for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(check()).toBe(true);
  }
  async function connect(url: string, headers: Record<string, string>) {
    const frames: ServerFrame[] = [];
    const ws = await h.app.injectWS(url, { headers }, {
      onInit: (socket) => socket.on('message', (data) => frames.push(ServerFrame.parse(JSON.parse(data.toString())))),
    });
    return { ws, frames };
  }
  const seqs = (frames: ServerFrame[]) => frames.flatMap((f) => (f.kind === 'event' ? [f.event.seq] : []));

  it('replays after SEQ then streams live, with no gap or duplicate', async () => {
    const task = await h.createTask('alice');
    for (let i = 0; i < 5; i++) await h.events.append(task.id, { type: 'user.message', data: { from: 'alice', text: `m${i}` } });
    const { ws, frames } = await connect(`/v1/tasks/${task.id}/events?after=3`, h.auth('alice'));
    await until(() => frames.some((f) => f.kind === 'live'));
    expect(frames.find((f) => f.kind === 'live')).toEqual({ kind: 'live', lastSeq: 7 });
    for (let i = 0; i < 3; i++) await h.events.append(task.id, { type: 'user.message', data: { from: 'alice', text: `live${i}` } });
    await until(() => seqs(frames).length === 7);
    expect(seqs(frames)).toEqual([4, 5, 6, 7, 8, 9, 10]);
    ws.terminate();
  });

  it('has no gap at the seam when events arrive during the replay', async () => {
    const task = await h.createTask('alice');
    for (let i = 0; i < 1200; i++) await h.events.append(task.id, { type: 'user.message', data: { from: 'alice', text: `m${i}` } });
    const { ws, frames } = await connect(`/v1/tasks/${task.id}/events?after=0`, h.auth('alice'));
    // Appended while the paged replay is running.
    for (let i = 0; i < 50; i++) {
      await h.events.append(task.id, { type: 'user.message', data: { from: 'alice', text: `during${i}` } });
      await new Promise((r) => setImmediate(r));
    }
    await until(() => seqs(frames).length === 1252);
    expect(seqs(frames)).toEqual(Array.from({ length: 1252 }, (_, i) => i + 1));
    ws.terminate();
  });

  it('fans out to many subscribers', async () => {
    const task = await h.createTask('alice');
    const connected = await Promise.all(Array.from({ length: 20 }, () => connect(`/v1/tasks/${task.id}/events`, h.auth('alice'))));
    const sockets = connected.map((c) => c.ws);
    const all = connected.map((c) => c.frames);
    await until(() => all.every((frames) => frames.some((f) => f.kind === 'live')));
    await h.events.append(task.id, { type: 'user.message', data: { from: 'alice', text: 'hello' } });
    await until(() => all.every((frames) => seqs(frames).includes(3)));
    for (const frames of all) expect(seqs(frames)).toEqual([1, 2, 3]);
    for (const ws of sockets) ws.terminate();
  });

  it('authenticates the socket by subprotocol, refuses strangers with 404 and no token with 401', async () => {
    const task = await h.createTask('alice');
    await expect(h.app.injectWS(`/v1/tasks/${task.id}/events`, { headers: h.auth('bob') })).rejects.toThrow(/404/);
    await expect(h.app.injectWS(`/v1/tasks/${task.id}/events`)).rejects.toThrow(/401/);
    const ws = await h.app.injectWS(`/v1/tasks/${task.id}/events`, {
      headers: { 'sec-websocket-protocol': `dockhand.v1, dockhand.bearer.${h.tokens.alice}` },
    });
    const frames = collect(ws);
    await until(() => frames.some((f) => f.kind === 'live'));
    ws.terminate();
  });

  it('answers an unknown client frame with an error frame naming the field', async () => {
    const task = await h.createTask('alice');
    const ws = await h.app.injectWS(`/v1/tasks/${task.id}/events`, { headers: h.auth('alice') });
    const frames = collect(ws);
    ws.send(JSON.stringify({ kind: 'subscribe' }));
    await until(() => frames.some((f) => f.kind === 'error'));
    const error = frames.find((f) => f.kind === 'error');
    expect(error?.kind === 'error' && error.error.field).toBe('kind');
    ws.terminate();
  });

  it('returns events as JSON without an upgrade', async () => {
    const task = await h.createTask('alice');
    const res = await h.app.inject({ url: `/v1/tasks/${task.id}/events?after=1`, headers: h.auth('alice') });
    const events: TaskEvent[] = JSON.parse(res.body).events;
    expect(events.map((e) => e.seq)).toEqual([2]);
  });
});
