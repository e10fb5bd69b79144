import { afterEach, describe, expect, it } from 'vitest';
import { childEnvironment, createGit, TOKEN_ENV } from './git';

describe('git child environment', () => {
  const saved = { ...process.env };
  afterEach(() => {
    process.env = { ...saved };
  });

  it('passes an allowlist only: no server secrets, no ambient GIT_* overrides, no global config', () => {
    process.env['ANTHROPIC_API_KEY'] = 'server-secret';
    process.env['DOCKHAND_WEBHOOK_SECRET'] = 'server-secret-2';
    process.env['GIT_DIR'] = '/somewhere/else';
    process.env['HTTPS_PROXY'] = 'http://proxy.internal:3128';
    const env = childEnvironment({ token: 'push-token', date: '2026-11-29T10:00:00Z' });
    expect(env['ANTHROPIC_API_KEY']).toBeUndefined();
    expect(env['DOCKHAND_WEBHOOK_SECRET']).toBeUndefined();
    expect(env['GIT_DIR']).toBeUndefined();
    expect(env).toMatchObject({
      [TOKEN_ENV]: 'push-token',
      HTTPS_PROXY: 'http://proxy.internal:3128',
      GIT_TERMINAL_PROMPT: '0',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_DATE: '2026-11-29T10:00:00Z',
      GIT_COMMITTER_DATE: '2026-11-29T10:00:00Z',
    });
    expect(childEnvironment()[TOKEN_ENV]).toBeUndefined();
  });

  it("passes the allowlist and the plain-HTTP proxy of the server's environment, not SSH_AUTH_SOCK", () => {
    const allowed = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'TZ', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'GIT_SSL_CAINFO', 'HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy'];
    process.env = Object.fromEntries([...allowed, 'SSH_AUTH_SOCK', 'ANTHROPIC_API_KEY', 'GIT_DIR'].map((name) => [name, `server ${name}`]));
    expect(childEnvironment()).toEqual({
      ...Object.fromEntries(allowed.map((name) => [name, `server ${name}`])),
      GIT_TERMINAL_PROMPT: '0',
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
    });
  });

  it('refuses a user name that could break out of the credential helper', () => {
    expect(() => createGit('/tmp', { token: 't', username: 'x"; rm -rf / #' })).toThrow(/username/);
  });
});
