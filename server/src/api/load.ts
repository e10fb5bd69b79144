import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DockhandError } from '../errors';

/*
 * Load shedding (issue 31: 1,000 concurrent requests with the rate limit lifted left `/healthz`
 * unanswered for over a minute while the server worked through requests whose clients had gone).
 *
 * - Admission: at most `maxInFlight` requests are worked on at once; the next is answered 503
 *   `overloaded` with `Retry-After` at once, before its token is looked up, so a burst costs the
 *   server a parse and an answer per request, not a query and a handler. A slot is freed when the
 *   answer is sent or the client goes.
 * - Gone clients: a request whose client closed the connection before its handler starts is
 *   dropped (no handler, no answer), checked again after the auth hook and the rate limit.
 * - Per turn of the event loop: a burst of connections is read in one poll phase, and 1,000
 *   requests there, each worked on however cheaply (parse, hooks, token lookup, log lines), kept
 *   the loop, and `/healthz` behind them, for seconds (measured: 4.6 s in one turn with only
 *   `/v1/me`). So at most `PER_TURN` requests start in one turn; the rest are answered 503 on
 *   the HTTP server itself (`TurnBudget`, `refuseOverloaded`), before Fastify, at the cost of a
 *   write of a fixed answer.
 * - `/healthz`, `/readyz` and `/metrics` are never refused and never counted, and neither is a
 *   WebSocket upgrade (a socket lives for hours; it would hold a slot for as long).
 *
 * What it will not do: stop a handler that already runs when its client goes (the store's
 * queries are synchronous and short; git children are bounded by their own timeouts).
 */

export const DEFAULT_MAX_IN_FLIGHT = 64;
export const RETRY_AFTER_SECONDS = 2;

const EXEMPT = new Set(['/healthz', '/readyz', '/metrics']);

/** Requests started in one turn of the event loop before the next is refused on the HTTP server. */
export const PER_TURN = 32;

/** Is this raw request one load shedding never refuses (health, metrics, a WebSocket upgrade)? */
export function exemptRaw(request: IncomingMessage): boolean {
  return EXEMPT.has((request.url ?? '').split('?')[0] ?? '') || request.headers.upgrade !== undefined;
}

/** Counts the requests started in the current turn of the event loop (reset in its check phase). */
export class TurnBudget {
  private started = 0;
  private resetting = false;

  constructor(private readonly perTurn = PER_TURN) {}

  /** True when one more request may start in this turn. */
  take(): boolean {
    if (!this.resetting) {
      this.resetting = true;
      setImmediate(() => {
        this.started = 0;
        this.resetting = false;
      });
    }
    this.started += 1;
    return this.started <= this.perTurn;
  }
}

const OVERLOADED_BODY = JSON.stringify(new DockhandError('overloaded', 'the server has more requests than it starts at once; this one was not started', {
  hint: `retry after ${RETRY_AFTER_SECONDS} seconds (Retry-After)`,
}).toBody());

/** The 503 written on the HTTP server itself: a fixed answer, no Fastify, no log line. */
export function refuseOverloaded(response: ServerResponse): void {
  response.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(OVERLOADED_BODY), 'retry-after': String(RETRY_AFTER_SECONDS) });
  response.end(OVERLOADED_BODY);
}

/** The client closed its connection (or aborted the request) before the answer. */
export function clientGone(raw: IncomingMessage): boolean {
  return raw.destroyed || raw.socket === null || raw.socket.destroyed;
}

function exempt(request: FastifyRequest): boolean {
  return EXEMPT.has(request.url.split('?')[0] ?? '') || request.headers.upgrade !== undefined;
}

/** Drops a request nobody waits for any more: no handler runs, nothing is written. */
function drop(request: FastifyRequest, reply: FastifyReply): void {
  reply.hijack();
  request.raw.destroy();
}

export interface LoadLimits {
  maxInFlight: number;
  /** Requests refused with 503 and requests dropped because their client had gone (for tests and logs). */
  counts: { refused: number; dropped: number; inFlight: number };
}

/** Registers the admission limit and the gone-client checks on the root instance. */
export function shedLoad(fastify: FastifyInstance, maxInFlight = DEFAULT_MAX_IN_FLIGHT): LoadLimits {
  const limits: LoadLimits = { maxInFlight, counts: { refused: 0, dropped: 0, inFlight: 0 } };
  fastify.addHook('onRequest', async (request, reply) => {
    if (exempt(request)) return;
    if (clientGone(request.raw)) {
      limits.counts.dropped += 1;
      return drop(request, reply);
    }
    if (limits.counts.inFlight >= maxInFlight) {
      limits.counts.refused += 1;
      const failure = new DockhandError('overloaded', `the server is working on ${maxInFlight} requests already; this one was not started`, {
        hint: `retry after ${RETRY_AFTER_SECONDS} seconds (Retry-After)`,
      });
      return reply.code(failure.status).header('retry-after', String(RETRY_AFTER_SECONDS)).send(failure.toBody());
    }
    limits.counts.inFlight += 1;
    let released = false;
    // 'close' comes once the answer is sent or the connection is gone, whichever is first.
    reply.raw.once('close', () => {
      if (released) return;
      released = true;
      limits.counts.inFlight -= 1;
    });
  });
  // After the token lookup and the rate limit, just before the handler: nobody waits, no work.
  fastify.addHook('preHandler', async (request, reply) => {
    if (exempt(request) || !clientGone(request.raw)) return;
    limits.counts.dropped += 1;
    return drop(request, reply);
  });
  return limits;
}
