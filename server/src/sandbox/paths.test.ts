import { describe, expect, it } from 'vitest';
import { sandboxEnvironment } from './environment';
import { workspacePath } from './paths';

describe('workspacePath', () => {
  it('maps relative paths into /workspace', () => {
    expect(workspacePath('src/index.ts')).toBe('/workspace/src/index.ts');
    expect(workspacePath('./a/../b')).toBe('/workspace/b');
    expect(workspacePath('')).toBe('/workspace');
    expect(workspacePath('.')).toBe('/workspace');
  });

  it('refuses absolute paths, .. escapes and NUL bytes, naming the field', () => {
    expect(() => workspacePath('/etc/passwd')).toThrow(/path "\/etc\/passwd" is absolute/);
    expect(() => workspacePath('..')).toThrow(/leaves the workspace/);
    expect(() => workspacePath('a/../../etc')).toThrow(/leaves the workspace/);
    expect(() => workspacePath('a\0b', 'cwd')).toThrow(/cwd "a\0b" contains a NUL byte/);
    expect(() => workspacePath('C:\\x')).toThrow(/absolute/);
  });
});

describe('sandboxEnvironment', () => {
  it('is built from the allowlist and explicit values only, never process.env', () => {
    process.env.DOCKHAND_UNIT_SECRET = 'leak';
    const env = sandboxEnvironment({ FOO: 'bar' });
    expect(env).toContain('CI=true');
    expect(env).toContain('HOME=/home/dockhand');
    expect(env).toContain('FOO=bar');
    expect(env.join('\n')).not.toContain('leak');
    expect(env.some((line) => line.startsWith('PATH='))).toBe(true);
  });

  it('has a global npm prefix in the workspace (kept by the snapshot) whose bin is on PATH: a CI\'s `npm install -g c8` is found by the tests', () => {
    const env = sandboxEnvironment();
    expect(env).toContain('NPM_CONFIG_PREFIX=/workspace/node_modules/.dockhand-global');
    const path = env.find((line) => line.startsWith('PATH='))?.slice('PATH='.length).split(':') ?? [];
    expect(path.slice(0, 2)).toEqual(['/workspace/node_modules/.bin', '/workspace/node_modules/.dockhand-global/bin']);
  });

  it('points the runner\'s files at scratch files, so a CI script appending to "$GITHUB_OUTPUT" does not fail on an empty name (jshttp/etag)', () => {
    const env = sandboxEnvironment();
    for (const name of ['GITHUB_OUTPUT', 'GITHUB_ENV', 'GITHUB_PATH', 'GITHUB_STEP_SUMMARY']) expect(env.find((line) => line.startsWith(`${name}=`))).toMatch(/^\w+=\/tmp\/github-[\w-]+$/);
    // Not the marker tools read as "running in GitHub Actions".
    expect(env.some((line) => line.startsWith('GITHUB_ACTIONS='))).toBe(false);
  });
});
