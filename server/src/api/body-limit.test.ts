import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { harness, type Harness } from './test-support';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const BODY_BYTES = 3 * 1024 * 1024;

interface Exchange {
  /** Everything the server sent. */
  received: string;
  /** The socket's error (ECONNRESET, EPIPE), if any. */
  error?: string;
}

/**
 * One raw HTTP/1.1 exchange: the head, then (unless it waits for `100 Continue` and gets a final
 * answer instead) the 3 MB body, written with back-pressure; then everything the server sends
 * until it closes.
 */
function exchange(port: number, token: string, mode: 'expect' | 'length' | 'chunked'): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let received = '';
    let error: string | undefined;
    const head = [
      'POST /v1/tasks HTTP/1.1',
      `Host: 127.0.0.1:${port}`,
      `Authorization: Bearer ${token}`,
      'Content-Type: application/json',
      ...(mode === 'chunked' ? ['Transfer-Encoding: chunked'] : [`Content-Length: ${BODY_BYTES}`]),
      ...(mode === 'expect' ? ['Expect: 100-continue'] : []),
      '',
      '',
    ].join('\r\n');
    const chunk = Buffer.alloc(64 * 1024, 'a');
    const sendBody = async () => {
      for (let sent = 0; sent < BODY_BYTES && !socket.destroyed; sent += chunk.length) {
        const piece = mode === 'chunked' ? Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk;
        if (!socket.write(piece)) await new Promise((done) => socket.once('drain', done));
      }
      if (mode === 'chunked' && !socket.destroyed) socket.write('0\r\n\r\n');
    };
    socket.on('connect', () => {
      socket.write(head);
      if (mode !== 'expect') void sendBody();
    });
    socket.on('data', (data) => {
      received += data.toString('latin1');
      if (mode === 'expect' && received.startsWith('HTTP/1.1 100')) void sendBody();
    });
    socket.on('error', (failure: NodeJS.ErrnoException) => {
      error = failure.code ?? failure.message;
    });
    socket.on('close', () => resolve({ received, ...(error ? { error } : {}) }));
    setTimeout(() => socket.destroy(), 60_000);
  });
}

describe('oversize bodies', () => {
  it('answers 413 naming body, read by the client, with and without Expect: 100-continue and Content-Length', async () => {
    h = await harness();
    await h.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (h.app.server.address() as AddressInfo).port;
    const token = h.auth('alice').authorization.replace('Bearer ', '');
    for (const mode of ['expect', 'length', 'chunked'] as const) {
      for (let round = 0; round < 4; round++) {
        const result = await exchange(port, token, mode);
        expect(result.error, `${mode} #${round}: ${result.received.slice(0, 80)}`).toBeUndefined();
        expect(result.received, mode).toMatch(/^HTTP\/1\.1 413 /);
        expect(result.received, mode).toContain('"field":"body"');
        expect(result.received.toLowerCase(), mode).toContain('connection: close');
        // Refused from its Content-Length: no `100 Continue`, so the body was never sent.
        if (mode === 'expect') expect(result.received).not.toContain('100 Continue');
      }
    }
  });
});
