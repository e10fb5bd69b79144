import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { forbiddenAddress, isAllowedTarget, startEgressProxy, withinAllowlist, type EgressProxy } from './egress-proxy';

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
    proxy = await startEgressProxy({ host: '127.0.0.1', peer: '127.0.0.1', allow: ['registry.npmjs.org'] });
    expect(await connectThrough(proxy, 'evil.example:443')).toBe(403);
    expect(await connectThrough(proxy, 'registry.npmjs.org:22')).toBe(403);
    expect(proxy.refused).toEqual(['evil.example:443', 'registry.npmjs.org:22']);
  });
});

describe('forbidden targets (issue #23: metadata, loopback, the gateway)', () => {
  let proxy: EgressProxy | undefined;
  afterEach(async () => proxy?.close());
  const answers: Record<string, string[]> = {
    'metadata.example.com': ['169.254.169.254'],
    'loopback.example.com': ['127.0.0.1'],
    'mapped.example.com': ['::ffff:127.0.0.1'],
    'private.example.com': ['10.1.2.3'],
    'mixed.example.com': ['203.0.113.9', '127.0.0.1'],
    'v6-local.example.com': ['fe80::1'],
  };
  const lookups: string[] = [];
  const resolve = async (host: string) => {
    lookups.push(host);
    const found = answers[host];
    if (!found) throw new Error(`ENOTFOUND ${host}`);
    return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

  it('refuses IP literals even when a repository lists them', () => {
    expect(isAllowedTarget('169.254.169.254:443', ['169.254.169.254'])).toBe(false);
    expect(isAllowedTarget('127.0.0.1:443', ['127.0.0.1'])).toBe(false);
    expect(isAllowedTarget('172.17.0.1:443', ['172.17.0.1'])).toBe(false);
  });

  it('judges addresses: loopback, link-local, private, own, mapped', () => {
    expect(forbiddenAddress('169.254.169.254')).toContain('link-local');
    expect(forbiddenAddress('::ffff:169.254.169.254')).toContain('link-local');
    expect(forbiddenAddress('127.0.0.53')).toContain('loopback');
    expect(forbiddenAddress('::1')).toContain('loopback');
    expect(forbiddenAddress('192.168.1.1')).toContain('private');
    expect(forbiddenAddress('192.168.1.1', { privateAllowed: true })).toBeUndefined();
    expect(forbiddenAddress('fd00::1')).toContain('private');
    const own = Object.values(networkInterfaces()).flatMap((entries) => entries ?? []).map((entry) => entry.address).find((address) => !address.startsWith('127.') && address !== '::1');
    if (own) expect(forbiddenAddress(own, { privateAllowed: true })).toMatch(/own addresses|loopback|link-local/);
    expect(forbiddenAddress('203.0.113.80')).toBeUndefined();
    // A bridge without a carrier (idle docker0) is missing from Node's list but is still this host's.
    const kernelLocal = /\|--\s+(\d+\.\d+\.\d+\.\d+)\n\s+\/32 host LOCAL/.exec(readFileSync('/proc/net/fib_trie', 'utf8').replace(/\|--\s+127\.[\d.]+\n\s+\/32 host LOCAL/g, ''))?.[1];
    if (kernelLocal) expect(forbiddenAddress(kernelLocal, { privateAllowed: true }), kernelLocal).toBe("one of this host's own addresses");
  });

  it('refuses names that resolve to forbidden addresses, before connecting, naming the address', async () => {
    proxy = await startEgressProxy({ host: '127.0.0.1', peer: '127.0.0.1', allow: ['*.example.com'], privateAllowed: ['private.example.com'], resolve });
    for (const name of ['metadata', 'loopback', 'mapped', 'mixed', 'v6-local', 'missing']) {
      const answer = await connectWithBody(proxy, `${name}.example.com:443`);
      expect(answer.status, name).toBe(403);
    }
    const metadata = await connectWithBody(proxy, 'metadata.example.com:443');
    expect(metadata.body).toContain('resolves to 169.254.169.254, a loopback, link-local');
    expect(proxy.refused).toContain('metadata.example.com:443');
    expect(lookups).toContain('metadata.example.com');
  });
});

function connectWithBody(proxy: EgressProxy, target: string): Promise<{ status: number; body: string }> {
  return new Promise((done, reject) => {
    const socket = connect(proxy.port, proxy.host, () => socket.write(`CONNECT ${target} HTTP/1.1\r\nhost: ${target}\r\n\r\n`));
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('end', () => done({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(text)?.[1] ?? 0), body: text }));
    socket.on('error', reject);
  });
}

describe('withinAllowlist (a repository narrows the fleet list, never widens it)', () => {
  it('takes hosts and patterns the fleet covers, nothing else', () => {
    const fleet = ['binaries.example.com', '*.cdn.example.org'];
    expect(withinAllowlist('binaries.example.com', fleet)).toBe(true);
    expect(withinAllowlist('a.cdn.example.org', fleet)).toBe(true);
    expect(withinAllowlist('*.eu.cdn.example.org', fleet)).toBe(true);
    expect(withinAllowlist('*.example.com', fleet)).toBe(false);
    expect(withinAllowlist('cdn.example.org', fleet)).toBe(false);
    expect(withinAllowlist('evil.example', fleet)).toBe(false);
    expect(withinAllowlist('binaries.example.com', [])).toBe(false);
  });
});
