import { describe, expect, it } from 'vitest';
import { pipFrontEnvironment, pipIndexUrlAtFront } from './dep-cache-pip';
import { parseEnvironmentFile } from './environment-file';
import { privateUpstreamUrl, pythonIndexBase, registryFor, resolveBuildRegistries, type PrivateRegistry } from './private-registries';

const FRONT = 'http://172.30.0.1:40123/';

describe('a repository\'s Python index behind the registry front', () => {
  it('reads pythonIndex from environment.yml, and refuses a secret name that is not one', () => {
    expect(parseEnvironmentFile('pythonIndex: { url: "https://pypi.acme.internal/simple/", username: ci, token: PYPI_ACME }\n')?.pythonIndex).toEqual({ url: 'https://pypi.acme.internal/simple/', username: 'ci', token: 'PYPI_ACME' });
    expect(() => parseEnvironmentFile('pythonIndex: { url: "https://pypi.acme.internal/simple/", token: "hunter2" }\n')).toThrow(/field "pythonIndex.token": must name a repository secret/);
  });

  it('the base is the simple URL less its simple/ segment, and pip\'s index at the front keeps the rest', () => {
    const cases: Array<[string, string, string]> = [
      ['http://127.0.0.1:8741/simple/', 'http://127.0.0.1:8741/', `${FRONT}-/pip/simple/`],
      ['https://acme.jfrog.io/artifactory/api/pypi/pypi-local/simple', 'https://acme.jfrog.io/artifactory/api/pypi/pypi-local/', `${FRONT}-/pip/simple/`],
      ['https://devpi.acme.internal/root/prod/+simple/', 'https://devpi.acme.internal/root/prod/', `${FRONT}-/pip/+simple/`],
      ['https://pypi.acme.internal/index/', 'https://pypi.acme.internal/index/', `${FRONT}-/pip/`],
    ];
    for (const [index, base, atFront] of cases) {
      expect(pythonIndexBase(new URL(index)).href).toBe(base);
      expect(pipIndexUrlAtFront(FRONT, { url: index, token: 'PYPI_ACME' })).toBe(atFront);
    }
  });

  it('the credential is HTTP Basic of the user name (default __token__) and the secret; the index is never an npm route', async () => {
    const resolve = (username?: string) => resolveBuildRegistries({
      repo: 'acme/py',
      usedBy: 'snapshot build k',
      registries: [],
      pythonIndex: { url: 'https://pypi.acme.internal/simple/', ...(username ? { username } : {}), token: 'PYPI_ACME' },
      credentials: async () => ({ values: new Map([['PYPI_ACME', 's3cret']]), missing: [] }),
      allowed: ['https://pypi.acme.internal/'],
      frontMissing: 'not an npm build (must not matter for the Python index)',
    });
    const [index] = await resolve('ci');
    expect(index).toEqual({ kind: 'python-index', url: new URL('https://pypi.acme.internal/'), authorization: `Basic ${Buffer.from('ci:s3cret').toString('base64')}`, secret: 'PYPI_ACME' });
    expect((await resolve())[0]?.authorization).toBe(`Basic ${Buffer.from('__token__:s3cret').toString('base64')}`);
    expect(registryFor('/simple/acme/', [index as PrivateRegistry])).toBeUndefined();
  });

  it('a missing index secret names the secret, the Python index and the command that sets it', async () => {
    await expect(resolveBuildRegistries({
      repo: 'acme/py',
      usedBy: 'snapshot build k',
      registries: [],
      pythonIndex: { url: 'https://pypi.acme.internal/simple/', token: 'PYPI_ACME' },
      credentials: async (_repo, names) => ({ values: new Map(), missing: [...names] }),
      allowed: ['https://pypi.acme.internal/'],
      frontMissing: undefined,
    })).rejects.toMatchObject({ message: 'acme/py has no secret PYPI_ACME, which .dockhand/environment.yml names for the Python index', hint: 'dockhand secret set acme/py PYPI_ACME --from-file <token file>' });
  });

  it('the credential goes to paths under the registry\'s base only, dot segments resolved (encoded or not)', () => {
    const index: PrivateRegistry = { kind: 'python-index', url: new URL('https://acme.jfrog.io/artifactory/api/pypi/pypi-local/'), authorization: 'Basic x', secret: 'PYPI_ACME' };
    expect(privateUpstreamUrl(index, '/simple/acme-private-utils/')?.href).toBe('https://acme.jfrog.io/artifactory/api/pypi/pypi-local/simple/acme-private-utils/');
    expect(privateUpstreamUrl(index, '/../pypi-other/simple/')).toBeUndefined();
    expect(privateUpstreamUrl(index, '/%2e%2e/%2E%2E/api/security/token')).toBeUndefined();
    expect(privateUpstreamUrl(index, '//evil.example/simple/')?.origin).toBe('https://acme.jfrog.io');
  });

  it('pip\'s environment: the front as its only index, no prompt, the front outside the proxy; the fleet\'s index stays as an extra one', () => {
    const env: Record<string, string> = { PIP_NO_INDEX: '1', PIP_NO_BUILD_ISOLATION: '0', NO_PROXY: '172.30.0.1', no_proxy: '172.30.0.1' };
    pipFrontEnvironment(env, FRONT, { url: 'https://pypi.acme.internal/simple/', token: 'PYPI_ACME' }, undefined);
    expect(env).toEqual({ PIP_INDEX_URL: `${FRONT}-/pip/simple/`, PIP_NO_INPUT: '1', PIP_NO_BUILD_ISOLATION: '0', PIP_TRUSTED_HOST: '172.30.0.1', NO_PROXY: '172.30.0.1', no_proxy: '172.30.0.1' });
    const withFleet: Record<string, string> = { PIP_INDEX_URL: 'https://pypi.fleet.internal/simple/' };
    pipFrontEnvironment(withFleet, FRONT, { url: 'https://pypi.acme.internal/simple/', token: 'PYPI_ACME' }, 'https://pypi.fleet.internal/simple/');
    expect(withFleet).toMatchObject({ PIP_INDEX_URL: `${FRONT}-/pip/simple/`, PIP_EXTRA_INDEX_URL: 'https://pypi.fleet.internal/simple/', NO_PROXY: '172.30.0.1' });
    expect(JSON.stringify(withFleet)).not.toContain('pypi.acme.internal');
  });
});
