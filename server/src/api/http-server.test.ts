import { request as httpRequest } from 'node:http';
import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { HealthResponse } from '@dockhand/protocol';
import { createLogger } from '../log';
import { harness, type Harness } from './test-support';
import { AcceptBacklog, BACKLOG_STREAK } from './load';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function get(port: number, path: string, method = 'GET'): Promise<{ status: number; body: string; type?: string }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: '127.0.0.1', port, path, method, agent: false }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve({
        status: response.statusCode ?? 0,
        body,
        ...(response.headers['content-type'] ? { type: response.headers['content-type'] } : {}),
      }));
    });
    request.on('error', reject);
    request.end();
  });
}

describe('the HTTP server under Fastify', () => {
  it('answers /healthz itself, never reaching Fastify (no request logged), with the route\'s body', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', destination: new Writable({ write(chunk: Buffer, _encoding, done) { lines.push(chunk.toString()); done(); } }) });
    h = await harness({ deps: { logger } });
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (h.app.server.address() as AddressInfo).port;
    const raw = await get(port, '/healthz?probe=1');
    expect(raw.status).toBe(200);
    expect(raw.type).toBe('application/json; charset=utf-8');
    expect(HealthResponse.parse(JSON.parse(raw.body))).toEqual(JSON.parse((await h.app.inject({ url: '/healthz' })).body));
    expect(await get(port, '/healthz', 'HEAD')).toMatchObject({ status: 200, body: '' });
    // Fastify logs every request it handles: /readyz is one, /healthz over HTTP is not.
    expect((await get(port, '/readyz')).status).toBe(200);
    const logged = lines.filter((line) => line.includes('incoming request'));
    expect(logged.some((line) => line.includes('/readyz'))).toBe(true);
    expect(logged.filter((line) => line.includes('/healthz?probe=1') || line.includes('"HEAD"'))).toEqual([]);
  });
});

describe('AcceptBacklog', () => {
  it('tells a backlog after a streak of accepts with the loop never idle, and forgets it once the loop idles', async () => {
    const backlog = new AcceptBacklog();
    // Accepts in one go, as a loop that never waits for the next connection sees them.
    for (let accepted = 0; accepted <= BACKLOG_STREAK; accepted++) {
      expect(backlog.backlogged).toBe(false);
      backlog.accepted();
    }
    expect(backlog.backlogged).toBe(true);
    // The loop waits in its poll phase (idle) before the next connection: the queue was empty.
    await new Promise((done) => setTimeout(done, 30));
    backlog.accepted();
    expect(backlog.backlogged).toBe(false);
  });

  it('forgets a backlog once the loop idles, with no new connection (requests on kept-alive connections after a burst)', async () => {
    const backlog = new AcceptBacklog();
    for (let accepted = 0; accepted <= BACKLOG_STREAK; accepted++) backlog.accepted();
    expect(backlog.backlogged).toBe(true);
    await new Promise((done) => setTimeout(done, 30));
    expect(backlog.backlogged).toBe(false);
  });
});
