import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DependencyCache } from './dep-cache';

/*
 * The front's misses against a real TLS upstream on loopback (a throwaway self-signed certificate
 * given as the cache's CA bundle): a miss reaches the build as the upstream sends it (not after
 * the whole tarball is in; the upstream holds back the second half until the client has read the
 * first), and the CA bundle is parsed once, not for each upstream connection.
 */

const TARBALL = Buffer.alloc(256 * 1024, 7);
let dir: string;
let upstream: Server;
let release: () => void = () => undefined;
let cache: DependencyCache;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'dep-cache-stream-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  upstream = createServer({ key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }, (request, response) => {
    const half = TARBALL.length / 2;
    if (request.url === '/slow/-/slow-1.0.0.tgz') {
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': TARBALL.length });
      response.write(TARBALL.subarray(0, half));
      release = () => response.end(TARBALL.subarray(half));
      return;
    }
    if (request.url?.startsWith('/many/-/')) {
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': 1024 }).end(Buffer.alloc(1024, 1));
      return;
    }
    if (request.url === '/short/-/short-1.0.0.tgz') {
      // Announces the whole tarball, sends half, and drops the connection.
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': TARBALL.length });
      response.write(TARBALL.subarray(0, half), () => setTimeout(() => response.socket?.destroy(), 50));
      return;
    }
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  const address = upstream.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  cache = new DependencyCache({ dir: join(dir, 'cache'), upstream: `https://127.0.0.1:${address.port}/`, caBundle: join(dir, 'cert.pem') });
});

afterAll(async () => {
  await cache?.close();
  await new Promise<void>((resolve) => upstream.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe('a miss through the dependency cache', () => {
  it('reaches the build while the upstream is still sending, and is kept once whole', async () => {
    const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1' });
    try {
      const response = await fetch(`${listener.url}slow/-/slow-1.0.0.tgz`, { signal: AbortSignal.timeout(10_000) });
      expect(response.headers.get('x-dockhand-cache')).toBe('miss');
      const reader = response.body?.getReader();
      if (!reader) throw new Error('no body');
      // Store-and-forward would send nothing until the upstream's last byte, which waits for this read.
      const first = await Promise.race([reader.read(), new Promise<'nothing'>((resolve) => setTimeout(() => resolve('nothing'), 3000))]);
      expect(first === 'nothing' ? 'no bytes before the upstream finished' : 'bytes while the upstream sends').toBe('bytes while the upstream sends');
      release();
      const chunks: Buffer[] = first === 'nothing' || !first.value ? [] : [Buffer.from(first.value)];
      for (let next = await reader.read(); !next.done; next = await reader.read()) chunks.push(Buffer.from(next.value));
      expect(Buffer.concat(chunks).equals(TARBALL)).toBe(true);
      await cache.idle();
      const again = await fetch(`${listener.url}slow/-/slow-1.0.0.tgz`);
      expect(again.headers.get('x-dockhand-cache')).toBe('hit');
      expect(Buffer.from(await again.arrayBuffer()).equals(TARBALL)).toBe(true);
    } finally {
      release();
      await listener.close();
    }
  });

  it('opens its upstream connections with one TLS context made at start, not one per connection (the CA bundle parsed once)', async () => {
    const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1' });
    const contexts = vi.spyOn(tls, 'createSecureContext');
    try {
      // Concurrent misses: the agent opens several connections to the upstream.
      const bodies = await Promise.all(Array.from({ length: 8 }, (_, index) => fetch(`${listener.url}many/-/many-1.0.${index}.tgz`).then(async (response) => (await response.arrayBuffer()).byteLength)));
      expect(bodies).toEqual(Array.from({ length: 8 }, () => 1024));
      expect(contexts).not.toHaveBeenCalled();
    } finally {
      contexts.mockRestore();
      await listener.close();
    }
  });

  it('cut short upstream: the build gets an error, not a short tarball, and nothing is kept', async () => {
    const listener = await cache.listen('127.0.0.1', { peer: '127.0.0.1' });
    try {
      // Once the build has the headers a 502 can no longer be said: the connection is cut instead.
      const outcome = await fetch(`${listener.url}short/-/short-1.0.0.tgz`, { signal: AbortSignal.timeout(10_000) }).then(
        async (response) => (response.ok ? `200 with ${(await response.arrayBuffer()).byteLength} bytes` : `status ${response.status}`),
        () => 'cut',
      ).catch(() => 'cut');
      expect(outcome).toBe('cut');
      await cache.idle();
      expect(await cache.read('/short/-/short-1.0.0.tgz')).toBeUndefined();
      expect(listener.stats.misses).toBe(0);
    } finally {
      await listener.close();
    }
  });
});
