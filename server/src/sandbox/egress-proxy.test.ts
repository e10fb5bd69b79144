import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { isAllowedTarget, startEgressProxy, type EgressProxy } from './egress-proxy';

describe('isAllowedTarget', () => {
  const allow = ['registry.npmjs.org', 'pypi.org'];
  it('allows only port 443 of listed hosts', () => {
    expect(isAllowedTarget('registry.npmjs.org:443', allow)).toBe(true);
    expect(isAllowedTarget('REGISTRY.npmjs.org:443', allow)).toBe(true);
    expect(isAllowedTarget('registry.npmjs.org:80', allow)).toBe(false);
    expect(isAllowedTarget('evil.example:443', allow)).toBe(false);
    expect(isAllowedTarget('registry.npmjs.org.evil.example:443', allow)).toBe(false);
    expect(isAllowedTarget('1.1.1.1:443', allow)).toBe(false);
    expect(isAllowedTarget('registry.npmjs.org', allow)).toBe(false);
  });
  it('reads "*.domain" as every subdomain of it, not the domain or look-alikes', () => {
    const wildcard = ['*.example.com'];
    expect(isAllowedTarget('bin.example.com:443', wildcard)).toBe(true);
    expect(isAllowedTarget('a.b.example.com:443', wildcard)).toBe(true);
    expect(isAllowedTarget('example.com:443', wildcard)).toBe(false);
    expect(isAllowedTarget('evilexample.com:443', wildcard)).toBe(false);
  });
});

function connectThrough(proxy: EgressProxy, target: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: proxy.host, port: proxy.port, method: 'CONNECT', path: target });
    req.on('connect', (response, socket) => {
      socket.destroy();
      resolve(response.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('startEgressProxy (loopback only, no outside network)', () => {
  let proxy: EgressProxy | undefined;
  afterEach(async () => proxy?.close());

  it('refuses hosts off the list and other ports with 403, recording them', async () => {
    proxy = await startEgressProxy({ host: '127.0.0.1', allow: ['registry.npmjs.org'] });
    expect(await connectThrough(proxy, 'evil.example:443')).toBe(403);
    expect(await connectThrough(proxy, 'registry.npmjs.org:22')).toBe(403);
    expect(proxy.refused).toEqual(['evil.example:443', 'registry.npmjs.org:22']);
  });
});
