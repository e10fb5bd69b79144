import { describe, expect, it } from 'vitest';
import { privateUpstreamUrl, type PrivateRegistry } from './private-registries';

/*
 * The registry front's base-path check on encoded paths (issue 31 item 6e): a path that climbs
 * out of the registry's base once the registry decodes it is refused, not sent with the credential.
 */

const npm: PrivateRegistry = { scope: '@acme', url: new URL('https://npm.acme.example/api/npm/private/'), authorization: 'Bearer x', secret: 'NPM_ACME' };
const pip: PrivateRegistry = { kind: 'python-index', url: new URL('https://acme.jfrog.io/artifactory/api/pypi/pypi-local/'), authorization: 'Basic x', secret: 'PIP_ACME' };

describe('privateUpstreamUrl on encoded paths', () => {
  it.each([
    [npm, '/..%2f..%2fother%2f@acme%2fprivpkg'],
    [npm, '/@acme%2f..%2f..%2f..%2fsecurity%2ftoken'],
    [npm, '/%2e%2e%2f%2e%2e%2fadmin'],
    [npm, '/@acme%252f..%252f..%252fadmin'],
    [npm, '/..%252f..%252fadmin'],
    [npm, '/%252e%252e/admin'],
    [npm, '/..%5c..%5cadmin'],
    [npm, '/@acme%255cpkg'],
    [npm, '/bad%zzescape'],
    [pip, '/simple/..%2f..%2f..%2fpypi-other/simple/'],
    [pip, '/simple%2f..%2f..%2f..%2fapi%2fsecurity%2ftoken'],
    [pip, '/simple/%252e%252e/%252e%252e/x/'],
  ])('refuses %#: %s', (registry, path) => {
    expect(privateUpstreamUrl(registry, path)).toBeUndefined();
  });

  it('still serves the ordinary paths: scoped package documents, tarballs, simple pages', () => {
    expect(privateUpstreamUrl(npm, '/@acme%2fprivpkg')?.href).toBe('https://npm.acme.example/api/npm/private/@acme%2fprivpkg');
    expect(privateUpstreamUrl(npm, '/@acme/privpkg/-/privpkg-1.0.0.tgz')?.href).toBe('https://npm.acme.example/api/npm/private/@acme/privpkg/-/privpkg-1.0.0.tgz');
    expect(privateUpstreamUrl(npm, '/@acme%2fprivpkg?write=true')?.pathname).toBe('/api/npm/private/@acme%2fprivpkg');
    expect(privateUpstreamUrl(pip, '/simple/acme-private-utils/')?.href).toBe('https://acme.jfrog.io/artifactory/api/pypi/pypi-local/simple/acme-private-utils/');
  });
});
