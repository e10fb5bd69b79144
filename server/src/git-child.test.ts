import { describe, expect, it } from 'vitest';
import { checkGitSource } from './git-child';

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
