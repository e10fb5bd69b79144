import { describe, expect, it } from 'vitest';
import { BERRY_RC_PATH, CLASSIC_RC_PATH, pointRegistryUrlsAtFront, yarnFrontEnvironment, yarnRcFile } from './dep-cache-yarn';

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
