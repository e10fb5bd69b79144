import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { HealthResponse } from '@dockhand/protocol';
import { SERVER_VERSION } from '../version';
import { answerTooLarge, declaredTooLarge, discardBody } from './body-limit';
import { LoadGate, pathOf } from './load';

/*
 * The HTTP server under Fastify (its `serverFactory`): what is decided on a raw request before
 * Fastify parses, logs, routes or authenticates it, so that a burst costs the server a parse and
 * a fixed answer per request (issue 31 item 6: `/healthz` within 1 s under 1,000 concurrent
 * requests).
 *
 * - `GET`/`HEAD /healthz` is answered here, a fixed body written at once: it never waits behind
 *   Fastify's hooks, the log or a handler's work (the Fastify route answers the same body to
 *   `inject()`).
 * - A body declared over the limit gets its 413 (`body-limit.ts`): instead of `100 Continue`, or
 *   after reading and discarding it.
 * - Load shedding (`load.ts`): past the turn's budget or with every in-flight slot taken, the
 *   request is answered 503 `overloaded` here; a request whose client has gone is dropped.
 *   `/metrics`, `/readyz` and WebSocket upgrades go on to Fastify whatever the load.
 *
 * What it will not do: read a request before the ones that came before it. Connections are
 * accepted and read in arrival order, so under a burst `/healthz` waits for the requests ahead
 * of it to be refused, each at the cost of a fixed write.
 */

const HEALTH: HealthResponse = { ok: true, service: 'dockhand', version: SERVER_VERSION };
const HEALTH_BODY = JSON.stringify(HEALTH);

/** `/healthz`'s answer (the Fastify route answers the same). */
export function health(): HealthResponse {
  return HEALTH;
}

function isHealth(request: IncomingMessage): boolean {
  return (request.method === 'GET' || request.method === 'HEAD') && pathOf(request.url) === '/healthz';
}

function answerHealth(request: IncomingMessage, response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(HEALTH_BODY) });
  response.end(request.method === 'HEAD' ? undefined : HEALTH_BODY);
}

/** Fastify's `serverFactory`: health, the body limit and load shedding before Fastify (above). */
export function apiServerFactory(limitBytes: number, gate = new LoadGate()) {
  return (handler: (request: IncomingMessage, response: ServerResponse) => void): Server => {
    const server = createServer((request, response) => {
      if (isHealth(request)) return answerHealth(request, response);
      if (declaredTooLarge(request, limitBytes)) {
        void discardBody(request).then(() => answerTooLarge(response, limitBytes));
        return;
      }
      if (gate.admitRaw(request, response)) handler(request, response);
    });
    server.on('connection', () => gate.backlog.accepted());
    server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
      // No `100 Continue`: a client that waits for it sends nothing more and reads the 413.
      if (declaredTooLarge(request, limitBytes)) return answerTooLarge(response, limitBytes);
      if (!gate.admitRaw(request, response)) return;
      response.writeContinue();
      handler(request, response);
    });
    return server;
  };
}
