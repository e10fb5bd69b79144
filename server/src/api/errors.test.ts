import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ErrorBody, TaskDiffResponse, TaskFileResponse } from '@dockhand/protocol';
import { gitBaseFiles } from '../runner/wiring';
import { harness, type Harness } from './test-support';

/** Error answers a hostile or careless client gets: each names the field and what to do. */

let h: Harness;
beforeEach(async () => {
  h = await harness();
});
afterEach(async () => {
  await h.close();
});

function errorOf(body: string) {
  return ErrorBody.parse(JSON.parse(body)).error;
}

describe('error answers', () => {
  it('a ticket body over its limit is 413 naming ticket.body and the limit', async () => {
    const res = await h.app.inject({
      method: 'POST', url: '/v1/tasks', headers: h.auth('alice'),
      payload: h.submitBody({ ticket: { kind: 'text', title: 'Big', body: 'x'.repeat(100_001) } }),
    });
    expect(res.statusCode).toBe(413);
    expect(errorOf(res.body)).toMatchObject({ code: 'payload_too_large', field: 'ticket.body', message: 'ticket.body: too large; the limit is 100000 characters' });
  });

  it('a steering message over its limit is 413 naming text; a body over the server limit is 413 naming the limit', async () => {
    const task = await h.createTask('alice');
    const steer = await h.app.inject({ method: 'POST', url: `/v1/tasks/${task.id}/messages`, headers: h.auth('alice'), payload: { text: 'y'.repeat(20_001) } });
    expect(steer.statusCode).toBe(413);
    expect(errorOf(steer.body)).toMatchObject({ code: 'payload_too_large', field: 'text' });
    const huge = await h.app.inject({
      method: 'POST', url: '/v1/tasks', headers: { ...h.auth('alice'), 'content-type': 'application/json' },
      payload: JSON.stringify(h.submitBody({ ticket: { kind: 'text', title: 'Huge', body: 'z'.repeat(3 * 1024 * 1024) } })),
    });
    expect(huge.statusCode).toBe(413);
    expect(errorOf(huge.body)).toMatchObject({ code: 'payload_too_large', field: 'body' });
    expect(errorOf(huge.body).message).toMatch(/2 MiB/);
  });

  it('an unsupported content type is 415 naming what the API reads', async () => {
    const res = await h.app.inject({ method: 'POST', url: '/v1/tasks', headers: { ...h.auth('alice'), 'content-type': 'text/xml' }, payload: '<task/>' });
    expect(res.statusCode).toBe(415);
    const error = errorOf(res.body);
    expect(error).toMatchObject({ code: 'unsupported_media_type', field: 'content-type' });
    expect(error.hint).toMatch(/application\/json/);
  });

  it('a selection that ends before it starts is 400 naming context.selection.endLine', async () => {
    const body = h.submitBody();
    const context = { ...(body['context'] as object), selection: { path: 'src/a.ts', startLine: 9, endLine: 3, text: 'x' } };
    const res = await h.app.inject({ method: 'POST', url: '/v1/tasks', headers: h.auth('alice'), payload: { ...body, context } });
    expect(res.statusCode).toBe(400);
    expect(errorOf(res.body)).toMatchObject({ code: 'bad_request', field: 'context.selection.endLine' });
  });
});

describe('reproducing tests at submission', () => {
  it('a named test file that is not at the base commit is 400 naming reproducingTests.N; a suffix of one that is, or a test name, is accepted', async () => {
    let repoPath = '';
    const real = await harness({ deps: { baseFiles: gitBaseFiles(() => repoPath) } });
    repoPath = real.repo.path;
    try {
      const missing = await real.app.inject({ method: 'POST', url: '/v1/tasks', headers: real.auth('alice'), payload: real.submitBody({ reproducingTests: ['parses negative numbers', 'test/nothing.test.js'] }) });
      expect(missing.statusCode).toBe(400);
      expect(errorOf(missing.body)).toMatchObject({ code: 'bad_request', field: 'reproducingTests.1' });
      expect(errorOf(missing.body).message).toMatch(/^reproducingTests\.1: test\/nothing\.test\.js is not a file of app at [0-9a-f]{12}$/);
      const accepted = await real.app.inject({ method: 'POST', url: '/v1/tasks', headers: real.auth('alice'), payload: real.submitBody({ reproducingTests: ['a.ts', 'src/a.ts', 'parses negative numbers'] }) });
      expect(accepted.statusCode).toBe(202);
      const task = await real.store.getTask(JSON.parse(accepted.body).id);
      expect(task?.reproducingTests).toEqual(['a.ts', 'src/a.ts', 'parses negative numbers']);
    } finally {
      await real.close();
    }
  });
});

describe('review routes', () => {
  it('files?path=<directory> is 400 naming path, not a tree listing', async () => {
    let repoPath = '';
    const real = await harness({ deps: { baseFiles: gitBaseFiles(() => repoPath) } });
    repoPath = real.repo.path;
    try {
      const task = await real.createTask('alice', { context: { repo: 'app', baseSha: real.repo.sha } });
      const dir = await real.app.inject({ url: `/v1/tasks/${task.id}/files?path=src`, headers: real.auth('alice') });
      expect(dir.statusCode).toBe(400);
      expect(errorOf(dir.body)).toMatchObject({ code: 'bad_request', field: 'path' });
      expect(errorOf(dir.body).message).toMatch(/src is a directory/);
    } finally {
      await real.close();
    }
  });

  it('the diff and a file are answered with secrets masked', async () => {
    const task = await h.createTask('alice');
    const token = `ghp_${'Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6'}`;
    const diff = ['diff --git a/src/a.ts b/src/a.ts', '--- a/src/a.ts', '+++ b/src/a.ts', '@@ -1,3 +1,4 @@', ' one', `+const token = "${token}";`, ' two', ' three', ''].join('\n');
    await h.events.setResult(task.id, { diff, summary: `done, token ${token}` });
    const res = await h.app.inject({ url: `/v1/tasks/${task.id}/diff`, headers: h.auth('alice') });
    const answer = TaskDiffResponse.parse(JSON.parse(res.body));
    expect(answer.diff).not.toContain(token);
    expect(answer.diff).toContain(`+const token = "[secret:github-pat …${token.slice(-4)}]";`);
    const file = TaskFileResponse.parse(JSON.parse((await h.app.inject({ url: `/v1/tasks/${task.id}/files?path=src/a.ts`, headers: h.auth('alice') })).body));
    expect(file.after).toContain('[secret:github-pat');
    expect(JSON.stringify(await h.store.getResult(task.id))).not.toContain(token);
  });
});
