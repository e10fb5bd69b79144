import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peerAddress } from './build-network-peer';
import { DependencyCache } from './dep-cache';
import { startEgressProxy } from './egress-proxy';

/*
 * Issue 31 item 1, the listeners' own check: the egress proxy and the registry front serve one
 * build container's address. Two builds are played by two loopback addresses (all of 127/8 is
 * this host's): "A" connects from 127.0.0.2, "B" from 127.0.0.3. B's connections, and any before
 * the build's address is known, are reset unread; they reach neither the handler, nor the
 * registry with A's credential, nor A's counts.
 */

const A = '127.0.0.2';
const B = '127.0.0.3';

/** A GET (or `method`) to `url` from the local address `from`: the status, or the error code of a refused connection. */
function ask(url: string, from: string, method = 'GET'): Promise<number | string> {
  return new Promise((resolve) => {
    const outgoing = request(url, { method, localAddress: from, agent: false, timeout: 10_000 }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode ?? 0));
    });
    outgoing.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    outgoing.end();
  });
}

let upstream: Server;
let upstreamUrl = '';
const seen: IncomingHttpHeaders[] = [];
let dir = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dockhand-peer-'));
  // A's private registry: records each request's headers (the credential among them).
  upstream = createServer((incoming, response) => {
    seen.push(incoming.headers);
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"name":"@acme/private-utils","versions":{}}');
  });
  await new Promise<void>((done) => upstream.listen(0, '127.0.0.1', () => done()));
  const address = upstream.address();
  if (address === null || typeof address === 'string') throw new Error('upstream not listening');
  upstreamUrl = `http://127.0.0.1:${address.port}/`;
});

afterAll(async () => {
  await new Promise<void>((done) => upstream.close(() => done()));
  rmSync(dir, { recursive: true, force: true });
});

describe('peerAddress', () => {
  it('reads IPv4-mapped IPv6 as its IPv4 and leaves other forms as they are', () => {
    expect(peerAddress('::ffff:172.18.0.2')).toBe('172.18.0.2');
    expect(peerAddress('::FFFF:127.0.0.2')).toBe('127.0.0.2');
    expect(peerAddress('172.18.0.2')).toBe('172.18.0.2');
    expect(peerAddress('FE80::1')).toBe('fe80::1');
    expect(peerAddress(undefined)).toBeUndefined();
  });
});

describe('the registry front serves only its build container', () => {
  it("refuses every connection until the build's address is known, then any other address; the credential goes upstream for the build's own requests only", async () => {
    const cache = new DependencyCache({ dir: join(dir, 'cache') });
    const listener = await cache.listen('127.0.0.1', { registries: [{ scope: '@acme', url: new URL(upstreamUrl), authorization: 'Bearer secret-of-a', secret: 'NPM_ACME' }] });
    const document = `${listener.url}@acme%2fprivate-utils`;
    try {
      expect(await ask(document, A)).toBe('ECONNRESET');
      listener.serve(A);
      expect(await ask(document, B)).toBe('ECONNRESET');
      expect(await ask(`${listener.url}-/pip/simple/acme-private-utils/`, B)).toBe('ECONNRESET');
      expect(seen).toEqual([]);
      expect(listener.secretUses.get('NPM_ACME')).toBeUndefined();
      expect(listener.stats).toMatchObject({ passedThrough: 0, refused: 0 });
      expect(listener.foreign).toBe(3);
      // A's own request reaches the registry with A's credential, and A's audit counts it alone.
      expect(await ask(document, A)).toBe(200);
      expect(seen.map((headers) => headers.authorization)).toEqual(['Bearer secret-of-a']);
      expect(listener.secretUses.get('NPM_ACME')).toBe(1);
      expect(listener.foreign).toBe(3);
    } finally {
      await listener.close();
      await cache.close();
    }
  });

  it('the address served may be given in its IPv4-mapped form', async () => {
    const cache = new DependencyCache({ dir: join(dir, 'cache-mapped') });
    const listener = await cache.listen('127.0.0.1', { peer: `::ffff:${A}` });
    try {
      expect(await ask(listener.url, A, 'POST')).toBe(405);
      expect(await ask(listener.url, B, 'POST')).toBe('ECONNRESET');
      expect(listener.foreign).toBe(1);
    } finally {
      await cache.close();
    }
  });
});

describe('the egress proxy serves only its build container', () => {
  it('refuses every connection until the address is known, then any other address, before its handler sees it', async () => {
    const proxy = await startEgressProxy({ host: '127.0.0.1', allow: ['registry.npmjs.org'] });
    const url = `http://127.0.0.1:${proxy.port}/`;
    try {
      expect(await ask(url, A)).toBe('ECONNRESET');
      proxy.serve(A);
      expect(await ask(url, B)).toBe('ECONNRESET');
      // The handler never saw B: the plain request it refuses with 403 is recorded only for A.
      expect(proxy.refused).toEqual([]);
      expect(await ask(url, A)).toBe(403);
      expect(proxy.refused).toEqual(['/']);
      expect(proxy.foreign).toBe(2);
    } finally {
      await proxy.close();
    }
  });

  it('on a dual-stack listener a peer arrives IPv4-mapped and is still recognised', async () => {
    const proxy = await startEgressProxy({ host: '::', allow: ['registry.npmjs.org'], peer: A });
    try {
      expect(await ask(`http://127.0.0.1:${proxy.port}/`, A)).toBe(403);
      expect(await ask(`http://127.0.0.1:${proxy.port}/`, B)).toBe('ECONNRESET');
      expect(proxy.foreign).toBe(1);
    } finally {
      await proxy.close();
    }
  });
});
