import type { IncomingMessage, ServerResponse } from 'node:http';
import { DockhandError } from '../errors';

/*
 * An oversize body gets its 413, read by the client, never a connection reset (issue 31: a 3 MB
 * body sometimes got a reset, because the answer was sent and the socket closed while the client
 * was still sending). Decided before Fastify sees the request, on the HTTP server (`http-server.ts`):
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

/** Answers the 413 for a body over `limitBytes` (unless an answer went out already). */
export function answerTooLarge(response: ServerResponse, limitBytes: number): void {
  if (response.headersSent || response.destroyed) return;
  const body = JSON.stringify(bodyTooLarge(limitBytes).toBody());
  response.writeHead(413, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
  response.end(body);
}
