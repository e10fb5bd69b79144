import { describe, expect, it } from 'vitest';
import { BERRY_RC_PATH, CLASSIC_RC_PATH, dropFrontCredentials, pointRegistryUrlsAtFront, yarnFrontEnvironment, yarnRcFile } from './dep-cache-yarn';

const FRONT = 'http://172.30.0.1:40123/';
const acme = { scope: '@acme', url: 'https://npm.acme.internal/artifactory/api/npm/npm-local/' };

describe('yarn through the registry front', () => {
  it("points a classic lockfile's private resolved URLs at the front and leaves the public ones", () => {
    const lockfile = [
      '"@acme/private-utils@1.0.0":',
      '  resolved "https://npm.acme.internal/artifactory/api/npm/npm-local/@acme/private-utils/-/private-utils-1.0.0.tgz#9af9"',
      'is-number@7.0.0:',
      '  resolved "https://registry.yarnpkg.com/is-number/-/is-number-7.0.0.tgz#7535"',
      // Another path on the same host is another registry: not this one's.
      '  resolved "https://npm.acme.internal/artifactory/api/npm/npm-remote/left-pad/-/left-pad-1.3.0.tgz"',
    ].join('\n');
    expect(pointRegistryUrlsAtFront(lockfile, [acme], FRONT).split('\n')).toEqual([
      '"@acme/private-utils@1.0.0":',
      '  resolved "http://172.30.0.1:40123/@acme/private-utils/-/private-utils-1.0.0.tgz#9af9"',
      'is-number@7.0.0:',
      '  resolved "https://registry.yarnpkg.com/is-number/-/is-number-7.0.0.tgz#7535"',
      '  resolved "https://npm.acme.internal/artifactory/api/npm/npm-remote/left-pad/-/left-pad-1.3.0.tgz"',
    ]);
  });

  it("points a berry .yarnrc.yml's scope registry (written without the slash) at the front, not a longer host", () => {
    const rc = 'npmScopes:\n  acme:\n    npmRegistryServer: "http://127.0.0.1:8741"\n    npmAlwaysAuth: true\nother: "http://127.0.0.1:87410"\n';
    expect(pointRegistryUrlsAtFront(rc, [{ scope: '@acme', url: 'http://127.0.0.1:8741/' }], FRONT)).toBe(
      'npmScopes:\n  acme:\n    npmRegistryServer: "http://172.30.0.1:40123"\n    npmAlwaysAuth: true\nother: "http://127.0.0.1:87410"\n',
    );
  });

  it('writes rc files that hold the front and the scopes, nothing of the registry', () => {
    const classic = yarnRcFile('yarn', [acme, { url: 'https://npm.acme.internal/' }], FRONT);
    expect(classic).toEqual({ path: CLASSIC_RC_PATH, text: `@acme:registry=${FRONT}\nregistry=${FRONT}\n` });
    const berry = yarnRcFile('yarn-berry', [acme], FRONT);
    expect(berry).toEqual({ path: BERRY_RC_PATH, text: `npmScopes:\n  "acme":\n    npmRegistryServer: "${FRONT}"\n` });
    for (const rc of [classic, berry]) expect(rc.text).not.toContain('acme.internal');
  });

  it("keeps the front's plain http off the CONNECT proxy and allows it to berry alone", () => {
    const proxy = 'http://172.30.0.1:39999';
    const classic: Record<string, string> = { NO_PROXY: '172.30.0.1', npm_config_proxy: proxy, npm_config_https_proxy: proxy };
    yarnFrontEnvironment(classic, 'yarn', FRONT, [acme]);
    expect(classic).toEqual({ NO_PROXY: '172.30.0.1', no_proxy: '172.30.0.1', npm_config_https_proxy: proxy, npm_config_userconfig: CLASSIC_RC_PATH });
    const berry: Record<string, string> = { YARN_HTTP_PROXY: proxy, YARN_HTTPS_PROXY: proxy, YARN_NPM_REGISTRY_SERVER: 'https://mirror.example/' };
    yarnFrontEnvironment(berry, 'yarn-berry', FRONT, [acme, { url: 'https://npm.acme.internal/' }]);
    expect(berry).toEqual({ NO_PROXY: '172.30.0.1', no_proxy: '172.30.0.1', YARN_HTTPS_PROXY: proxy, YARN_UNSAFE_HTTP_WHITELIST: '172.30.0.1', YARN_NPM_REGISTRY_SERVER: FRONT });
  });
});

describe('the repository\'s own credential lines for a registry the front replaces', () => {
  const registries = [{ scope: '@acme', url: 'https://npm.acme.internal/artifactory/api/npm/npm-local/' }];

  it('drops an .npmrc or classic .yarnrc token line of that registry (an unset ${NPM_TOKEN} would stop yarn), keeping the others', () => {
    const npmrc = [
      '@acme:registry=https://npm.acme.internal/artifactory/api/npm/npm-local/',
      '//npm.acme.internal/artifactory/api/npm/npm-local/:_authToken=${NPM_TOKEN}',
      '//npm.acme.internal/artifactory/api/npm/npm-local/:always-auth=true',
      '//npm.other.internal/:_authToken=${OTHER_TOKEN}',
      '_authToken=${DEFAULT_TOKEN}',
    ].join('\n');
    expect(dropFrontCredentials('.npmrc', npmrc, registries).split('\n')).toEqual([
      '@acme:registry=https://npm.acme.internal/artifactory/api/npm/npm-local/',
      '//npm.acme.internal/artifactory/api/npm/npm-local/:always-auth=true',
      '//npm.other.internal/:_authToken=${OTHER_TOKEN}',
      '_authToken=${DEFAULT_TOKEN}',
    ]);
    const yarnrc = '"@acme:registry" "https://npm.acme.internal/artifactory/api/npm/npm-local/"\n"//npm.acme.internal/artifactory/api/npm/npm-local/:_authToken" "${NPM_TOKEN}"\n';
    expect(dropFrontCredentials('.yarnrc', yarnrc, registries)).toBe('"@acme:registry" "https://npm.acme.internal/artifactory/api/npm/npm-local/"\n');
    // The default registry replaced: the top-level token goes too.
    expect(dropFrontCredentials('.npmrc', 'registry=https://mirror.acme.internal/\n_authToken=${NPM_TOKEN}\n', [{ url: 'https://mirror.acme.internal/' }])).toBe('registry=https://mirror.acme.internal/\n');
  });

  it('drops berry\'s npmAuthToken of the scope, of the registry entry and (default registry) at the top, and leaves an rc without them byte for byte', () => {
    const rc = [
      'nodeLinker: node-modules',
      'npmScopes:',
      '  acme:',
      '    npmRegistryServer: "https://npm.acme.internal/artifactory/api/npm/npm-local"',
      '    npmAuthToken: "${NPM_TOKEN}"',
      '  other:',
      '    npmAuthToken: "${OTHER_TOKEN}"',
      'npmRegistries:',
      '  "https://npm.acme.internal/artifactory/api/npm/npm-local":',
      '    npmAuthIdent: "${NPM_IDENT}"',
      '',
    ].join('\n');
    const dropped = dropFrontCredentials('.yarnrc.yml', rc, registries);
    expect(dropped).not.toContain('NPM_TOKEN');
    expect(dropped).not.toContain('NPM_IDENT');
    expect(dropped).toContain('npmAuthToken: "${OTHER_TOKEN}"');
    expect(dropped).toContain('npmRegistryServer: "https://npm.acme.internal/artifactory/api/npm/npm-local"');
    const plain = 'npmScopes:\n  acme:\n    npmRegistryServer: "https://npm.acme.internal/"   # the company registry\n';
    expect(dropFrontCredentials('.yarnrc.yml', plain, registries)).toBe(plain);
  });
});
