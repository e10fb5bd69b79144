import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { DockhandError } from '../errors';
import { exemptRaw, refuseOverloaded, TurnBudget } from './load';

/*
 * An oversize body gets its 413, read by the client, never a connection reset (issue 31: a 3 MB
 * body sometimes got a reset, because the answer was sent and the socket closed while the client
 * was still sending). Decided before Fastify sees the request, on the HTTP server:
 *
 * - `Expect: 100-continue` with a Content-Length over the limit: the 413 goes out instead of
 *   `100 Continue` (Node's `checkContinue`), so a client that waits never sends the body;
 * - a Content-Length over the limit without `Expect`: the body is read and thrown away (up to
 *   `DISCARD_LIMIT_BYTES`, for at most `DISCARD_TIMEOUT_MS`), then the 413 with `connection: close`;
 * - a body without Content-Length (chunked) over the limit: Fastify stops reading it at the limit
 *   and the app's error handler does the same discarding before answering (`discardBody`).
 *
 * What it will not do: read an endless body. Past the discard bound the connection is cut: a
 * client that sends 64 MiB after being told 2 MiB gets a reset.
 */

export const DISCARD_LIMIT_BYTES = 64 * 1024 * 1024;
const DISCARD_TIMEOUT_MS = 30_000;

function formatBytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

/** The one 413 for a whole body over the server's limit. */
export function bodyTooLarge(limitBytes: number): DockhandError {
  return new DockhandError('payload_too_large', `body: the request body is over the server's limit of ${formatBytes(limitBytes)}`, {
    field: 'body',
    hint: `send at most ${formatBytes(limitBytes)}; a ticket body takes at most 100000 characters`,
  });
}

/** Is the body's declared length (Content-Length) over `limitBytes`? */
export function declaredTooLarge(request: IncomingMessage, limitBytes: number): boolean {
  const header = request.headers['content-length'];
  return header !== undefined && /^\s*\d+\s*$/.test(header) && Number(header) > limitBytes;
}

/**
 * Reads and throws away what is left of a request's body, so closing the connection afterwards
 * resets nothing the client is still sending. Past `bound` bytes or `timeoutMs` the socket is cut.
 */
export function discardBody(request: IncomingMessage, bound = DISCARD_LIMIT_BYTES, timeoutMs = DISCARD_TIMEOUT_MS): Promise<void> {
  return new Promise((resolve) => {
    if (request.complete || request.destroyed) return resolve();
    let read = 0;
    const finish = () => {
      clearTimeout(timer);
      request.off('data', onData);
      request.off('end', finish);
      request.off('close', finish);
      request.off('error', finish);
      resolve();
    };
    const cut = () => {
      request.socket.destroy();
      finish();
    };
    const onData = (chunk: Buffer) => {
      read += chunk.length;
      if (read > bound) cut();
    };
    const timer = setTimeout(cut, timeoutMs);
    request.on('data', onData);
    request.once('end', finish);
    request.once('close', finish);
    request.once('error', finish);
    request.resume();
  });
}

function answer(response: ServerResponse, limitBytes: number): void {
  if (response.headersSent || response.destroyed) return;
  const body = JSON.stringify(bodyTooLarge(limitBytes).toBody());
  response.writeHead(413, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
  response.end(body);
}

/**
 * Fastify's `serverFactory`: an HTTP server that refuses a body declared over `limitBytes`
 * before `100 Continue` (or after reading and discarding it) and hands every other request to Fastify.
 */
export function bodyLimitedServer(limitBytes: number, budget = new TurnBudget()) {
  return (handler: (request: IncomingMessage, response: ServerResponse) => void): Server => {
    // A burst past the turn's budget is refused here, before Fastify (`api/load.ts`).
    const admitted = (request: IncomingMessage, response: ServerResponse): boolean => {
      if (exemptRaw(request) || budget.take()) return true;
      refuseOverloaded(response);
      return false;
    };
    const server = createServer((request, response) => {
      if (!declaredTooLarge(request, limitBytes)) {
        if (admitted(request, response)) handler(request, response);
        return;
      }
      void discardBody(request).then(() => answer(response, limitBytes));
    });
    server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
      // No `100 Continue`: a client that waits for it sends nothing more and reads the 413.
      if (declaredTooLarge(request, limitBytes)) return answer(response, limitBytes);
      if (!admitted(request, response)) return;
      response.writeContinue();
      handler(request, response);
    });
    return server;
  };
}
