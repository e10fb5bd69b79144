import { afterEach, describe, expect, it } from 'vitest';
import { checkGitSource, gitChildEnvironment } from './git-child';

describe('checkGitSource', () => {
  it.each([
    ['/srv/repos/shop', 'path', '/srv/repos/shop'],
    ['/srv/repos/shop.git/', 'path', '/srv/repos/shop.git'],
    ['https://github.com/acme/shop.git', 'https', 'https://github.com/acme/shop.git'],
    ['ssh://git@github.com/acme/shop.git', 'ssh', 'ssh://git@github.com/acme/shop.git'],
    ['git@github.com:acme/shop.git', 'ssh', 'git@github.com:acme/shop.git'],
  ])('accepts %s', (source, kind, canonical) => {
    expect(checkGitSource(source)).toEqual({ source: canonical, kind });
  });

  it.each([
    ['ext::sh -c touch% /tmp/pwned', 'transport helper'],
    ['fd::17', 'transport helper'],
    ['--upload-pack=touch /tmp/pwned', 'starts with "-"'],
    ['-uf', 'starts with "-"'],
    ['file:///srv/x.git', 'file://'],
    ['http://127.0.0.1:1/x.git', 'plain http'],
    ['https://u:p@github.com/a/b.git', 'credentials'],
    ['ssh://-oProxyCommand=x/y', 'invalid host'],
    ['git@-oProxyCommand=x:y', 'neither an absolute path'],
    ['-oProxyCommand@host:y', 'starts with "-"'],
    ['git@github.com:-x', 'invalid repository path'],
    ['https://github.com/-a/b.git', 'starting with "-"'],
    ['../../etc', 'neither an absolute path'],
    ['/srv/../etc', '".."'],
    ['/srv/x\n', 'control characters'],
    ['gopher://x/y', 'gopher:// scheme'],
  ])('refuses %s, naming the field', (source, why) => {
    expect(() => checkGitSource(source, 'context.repo')).toThrow(expect.objectContaining({ code: 'bad_request', field: 'context.repo', message: expect.stringContaining(why) }));
  });
});

describe('gitChildEnvironment', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it("passes the allowlist and SSH_AUTH_SOCK of the server's environment: not the plain-HTTP proxy, no secret, no GIT_* override", () => {
    const allowed = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'TZ', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'GIT_SSL_CAINFO', 'HTTPS_PROXY', 'https_proxy', 'NO_PROXY', 'no_proxy', 'SSH_AUTH_SOCK'];
    process.env = Object.fromEntries([...allowed, 'HTTP_PROXY', 'http_proxy', 'ANTHROPIC_API_KEY', 'GIT_DIR'].map((name) => [name, `server ${name}`]));
    expect(gitChildEnvironment({ GIT_PROTOCOL: 'version=2' })).toEqual({
      ...Object.fromEntries(allowed.map((name) => [name, `server ${name}`])),
      GIT_TERMINAL_PROMPT: '0',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_ALLOW_PROTOCOL: 'file:https:ssh',
      GIT_SSH_COMMAND: expect.stringContaining('BatchMode=yes'),
      GIT_PROTOCOL: 'version=2',
    });
  });
});
