import { describe, expect, it } from 'vitest';
import { parseEnvironmentFile } from './environment-file';
import { describeRefusals, pointTarballsAtFront, registryFor, resolveBuildRegistries, scopeOfPath, type BuildRegistriesInput, type PrivateRegistry } from './private-registries';

const acme: PrivateRegistry = { scope: '@acme', url: new URL('https://npm.acme.internal/artifactory/api/npm/npm-local/'), authorization: 'Bearer t', secret: 'NPM_ACME' };
const fallback: PrivateRegistry = { url: new URL('https://mirror.acme.internal/'), authorization: 'Bearer d', secret: 'NPM_DEFAULT' };

describe('routing a build\'s registry paths', () => {
  it('finds the scope of package documents and tarballs, encoded or not', () => {
    expect(scopeOfPath('/@acme%2fprivate-utils')).toBe('@acme');
    expect(scopeOfPath('/@ACME%2Fprivate-utils')).toBe('@acme');
    expect(scopeOfPath('/@acme/private-utils/-/private-utils-1.0.0.tgz')).toBe('@acme');
    expect(scopeOfPath('/is-number')).toBeUndefined();
  });

  it('a scope\'s paths go to its registry, the rest to the default one when there is one, else to none', () => {
    expect(registryFor('/@acme%2fx', [acme, fallback])).toBe(acme);
    expect(registryFor('/@other%2fx', [acme, fallback])).toBe(fallback);
    expect(registryFor('/is-number', [acme, fallback])).toBe(fallback);
    expect(registryFor('/is-number', [acme])).toBeUndefined();
    expect(registryFor('/@acme%2fx', [])).toBeUndefined();
  });

  it('points a document\'s tarballs (under the registry\'s base path) at the front', () => {
    const document = JSON.stringify({ versions: { '1.0.0': { dist: { tarball: 'https://npm.acme.internal/artifactory/api/npm/npm-local/@acme/x/-/x-1.0.0.tgz' } } } });
    expect(pointTarballsAtFront(document, acme, 'http://10.0.0.1:4000/')).toContain('"tarball":"http://10.0.0.1:4000/@acme/x/-/x-1.0.0.tgz"');
  });
});

describe('resolving a build\'s registries', () => {
  const input = (more: Partial<BuildRegistriesInput> = {}): BuildRegistriesInput => ({
    repo: 'acme/web',
    usedBy: 'snapshot build k',
    registries: [{ scope: '@acme', url: 'https://npm.acme.internal/', token: 'NPM_ACME' }, { url: 'https://mirror.acme.internal/', token: 'NPM_DEFAULT' }],
    credentials: async (_repo, names) => ({ values: new Map(names.filter((name) => name === 'NPM_ACME').map((name) => [name, 'value'])), missing: names.filter((name) => name !== 'NPM_ACME') }),
    allowed: ['https://npm.acme.internal/', 'https://mirror.acme.internal'],
    frontMissing: undefined,
    ...more,
  });

  it('names every missing secret and the command that sets each (what repo check shows as the action)', async () => {
    await expect(resolveBuildRegistries(input())).rejects.toMatchObject({
      message: 'acme/web has no secret NPM_DEFAULT, which .dockhand/environment.yml names for the default registry',
      hint: 'dockhand secret set acme/web NPM_DEFAULT --from-file <token file>',
    });
    const none = input({ credentials: async (_repo, names) => ({ values: new Map(), missing: [...names] }) });
    await expect(resolveBuildRegistries(none)).rejects.toMatchObject({
      hint: 'dockhand secret set acme/web NPM_ACME --from-file <token file>; dockhand secret set acme/web NPM_DEFAULT --from-file <token file>',
    });
  });

  it('gives the front each registry with its bearer credential when all are set', async () => {
    const resolved = await resolveBuildRegistries(input({ credentials: async (_repo, names) => ({ values: new Map(names.map((name) => [name, `v-${name}`])), missing: [] }) }));
    expect(resolved.map((registry) => [registry.scope, registry.url.href, registry.authorization, registry.secret])).toEqual([
      ['@acme', 'https://npm.acme.internal/', 'Bearer v-NPM_ACME', 'NPM_ACME'],
      [undefined, 'https://mirror.acme.internal/', 'Bearer v-NPM_DEFAULT', 'NPM_DEFAULT'],
    ]);
  });

  it('refuses a URL the admin did not allow, plain http off loopback, and a build that cannot use the front', async () => {
    await expect(resolveBuildRegistries(input({ allowed: [] }))).rejects.toMatchObject({ hint: 'an admin allows it with DOCKHAND_PRIVATE_REGISTRIES=https://npm.acme.internal/ (comma-separated URL prefixes)' });
    await expect(resolveBuildRegistries(input({ allowed: ['https://npm.acme.internal.evil/'] }))).rejects.toThrow(/not a registry this server may send credentials to/);
    await expect(resolveBuildRegistries(input({ registries: [{ scope: '@acme', url: 'http://npm.acme.internal/', token: 'NPM_ACME' }], allowed: ['http://npm.acme.internal/'] }))).rejects.toThrow(/must be https:\/\//);
    await expect(resolveBuildRegistries(input({ frontMissing: 'its package manager (yarn) does not install through the registry front (npm, pnpm and yarn do)' }))).rejects.toThrow(/names registries, but its package manager \(yarn\)/);
    expect(await resolveBuildRegistries(input({ registries: [] }))).toEqual([]);
  });

  it('a refusal names the registry, its answer, the secret and the fix, never a value', () => {
    expect(describeRefusals('acme/web', [{ registry: 'https://npm.acme.internal/', scope: '@acme', secret: 'NPM_ACME', status: 403, path: '/@acme%2fx' }])).toEqual({
      message: 'registry https://npm.acme.internal/ answered 403 (forbidden) for @acme with the token of secret NPM_ACME',
      hint: 'set a token that registry accepts: dockhand secret set acme/web NPM_ACME --from-file <token file>',
    });
    expect(describeRefusals('acme/web', [])).toBeUndefined();
  });
});

describe('registries in .dockhand/environment.yml', () => {
  it('reads scope, URL and secret name; refuses a repeated scope and a token that is not a secret name', () => {
    expect(parseEnvironmentFile('registries: [{ scope: "@acme", url: "https://npm.acme.internal/", token: NPM_ACME }]\n')?.registries).toEqual([{ scope: '@acme', url: 'https://npm.acme.internal/', token: 'NPM_ACME' }]);
    expect(() => parseEnvironmentFile('registries: [{ url: "https://a.example/", token: A }, { url: "https://b.example/", token: B }]\n')).toThrow(/each scope \(and the default registry, without one\) may be named once/);
    expect(() => parseEnvironmentFile('registries: [{ scope: "@acme", url: "https://a.example/", token: "npm_1234secret" }]\n')).toThrow(/field "registries\[0\]\.token": must name a repository secret/);
  });
});
