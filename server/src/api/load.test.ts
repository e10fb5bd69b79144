import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './test-support';
import { shedLoad, TurnBudget } from './load';

let fastify: FastifyInstance | undefined;
let h: Harness | undefined;
afterEach(async () => {
  await fastify?.close();
  await h?.close();
  fastify = undefined;
  h = undefined;
});

/** A server with a slow route (`/slow`, held until `release`), `/healthz`, and the admission limit. */
async function slowServer(maxInFlight: number) {
  const app = Fastify();
  const limits = shedLoad(app, maxInFlight);
  let started = 0;
  const waiting: Array<() => void> = [];
  app.get('/slow', async () => {
    started += 1;
    await new Promise<void>((done) => waiting.push(done));
    return { ok: true };
  });
  app.get('/healthz', async () => ({ ok: true }));
  // A slow step before the handler (as the app's token lookup, an onRequest hook of its child
  // context, is under load): a client may go meanwhile.
  await app.register(async (child) => {
    child.addHook('onRequest', async () => new Promise((done) => setTimeout(done, 300)));
    child.get('/gated', async () => {
      started += 1;
      return { ok: true };
    });
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  fastify = app;
  const port = (app.server.address() as AddressInfo).port;
  return { app, limits, port, started: () => started, release: () => waiting.splice(0).forEach((done) => done()) };
}

function get(port: number, path: string, abortAfterMs?: number): Promise<{ status: number; retryAfter?: string; ms: number } | 'aborted'> {
  const begun = Date.now();
  return new Promise((resolve) => {
    const request = httpRequest({ host: '127.0.0.1', port, path, agent: false }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0, ...(response.headers['retry-after'] ? { retryAfter: String(response.headers['retry-after']) } : {}), ms: Date.now() - begun }));
    });
    request.on('error', () => resolve('aborted'));
    if (abortAfterMs !== undefined) setTimeout(() => request.destroy(), abortAfterMs);
    request.end();
  });
}

describe('load shedding', () => {
  it('works on at most maxInFlight requests, answers the rest 503 with Retry-After at once, and /healthz throughout', async () => {
    const server = await slowServer(4);
    const answers = Array.from({ length: 60 }, () => get(server.port, '/slow'));
    // The refused ones come back while the admitted four still wait.
    const until = Date.now() + 30_000;
    while (server.limits.counts.refused < 56 && Date.now() < until) await new Promise((done) => setTimeout(done, 20));
    expect(server.limits.counts.refused).toBe(56);
    const health = await get(server.port, '/healthz');
    expect(health).toMatchObject({ status: 200 });
    expect(server.started()).toBe(4);
    server.release();
    const settled = await Promise.all(answers);
    const statuses = settled.map((answer) => (answer === 'aborted' ? 0 : answer.status));
    expect(statuses.filter((status) => status === 200)).toHaveLength(4);
    expect(statuses.filter((status) => status === 503)).toHaveLength(56);
    expect(settled.find((answer) => answer !== 'aborted' && answer.status === 503)).toMatchObject({ retryAfter: '2' });
    // Slots are given back: the next request is worked on.
    const next = get(server.port, '/slow');
    while (server.started() < 5) await new Promise((done) => setTimeout(done, 20));
    server.release();
    expect(await next).toMatchObject({ status: 200 });
    expect(server.limits.counts.inFlight).toBe(0);
  });

  it('drops a request whose client went before its handler started', async () => {
    const server = await slowServer(8);
    const answers = await Promise.all(Array.from({ length: 5 }, () => get(server.port, '/gated', 50)));
    expect(answers.every((answer) => answer === 'aborted')).toBe(true);
    await new Promise((done) => setTimeout(done, 600));
    expect(server.started()).toBe(0);
    expect(server.limits.counts.dropped).toBe(5);
    expect(server.limits.counts.inFlight).toBe(0);
  });

  it('frees its slots on the app\'s own injected requests too', async () => {
    h = await harness({ deps: { limits: { maxInFlight: 2 } } });
    for (let index = 0; index < 20; index++) {
      const response = await h.app.inject({ method: 'GET', url: '/v1/me', headers: h.auth('alice') });
      expect(response.statusCode).toBe(200);
    }
  });

  it('starts at most the turn\'s budget of requests in one turn of the event loop, then again in the next', async () => {
    const budget = new TurnBudget(32);
    const first = Array.from({ length: 40 }, () => budget.take());
    expect(first.filter(Boolean)).toHaveLength(32);
    expect(first.slice(32).some(Boolean)).toBe(false);
    await new Promise((done) => setImmediate(done));
    expect(budget.take()).toBe(true);
  });

  it('a burst of 300 at once on the app\'s HTTP server: past the turn\'s budget answered 503 with Retry-After, /healthz answered', async () => {
    h = await harness({ deps: { limits: { ratePerMinute: 100_000 } } });
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (h.app.server.address() as AddressInfo).port;
    const { authorization } = h.auth('alice');
    const burst = await new Promise<number[]>((resolve) => {
      const statuses: number[] = [];
      for (let index = 0; index < 300; index++) {
        const request = httpRequest({ host: '127.0.0.1', port, path: '/v1/me', agent: false, headers: { authorization } }, (response) => {
          response.resume();
          response.on('end', () => {
            statuses.push(response.statusCode ?? 0);
            if (statuses.length === 300) resolve(statuses);
          });
        });
        request.on('error', () => {
          statuses.push(0);
          if (statuses.length === 300) resolve(statuses);
        });
        request.end();
      }
    });
    expect(burst.filter((status) => status === 0)).toHaveLength(0);
    expect(burst.every((status) => status === 200 || status === 503)).toBe(true);
    expect(await get(port, '/healthz')).toMatchObject({ status: 200 });
  });
});
