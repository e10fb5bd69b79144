/**
 * The environment a sandbox process sees, built only from this allowlist and explicit values:
 * never from the server's own `process.env` (which holds model keys and push tokens).
 */
export const SANDBOX_HOME = '/home/dockhand';
/**
 * npm's global prefix: a CI's `npm install -g c8` runs in the snapshot build (which has the
 * network) and installs here, in the workspace's layer that the snapshot keeps (HOME is a tmpfs
 * at task time), under node_modules/ (excluded from every diff) in a dot-directory that npm and
 * pnpm installs leave alone. Its bin is on PATH after the repository's own.
 */
export const NPM_GLOBAL_PREFIX = '/workspace/node_modules/.dockhand-global';
/** PATH without toolchains; a snapshot's mounted toolchains go in front of it (driver). */
export const SANDBOX_PATH = '/workspace/node_modules/.bin:/workspace/node_modules/.dockhand-global/bin:/workspace/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export function sandboxEnvironment(extra: Record<string, string> = {}): string[] {
  const base: Record<string, string> = {
    PATH: SANDBOX_PATH,
    HOME: SANDBOX_HOME,
    LANG: 'C.UTF-8',
    CI: 'true',
    // Keep tools from phoning home or prompting: there is no network and no TTY.
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
    PIP_DISABLE_PIP_VERSION_CHECK: '1',
    GIT_TERMINAL_PROMPT: '0',
    // `npm root -g` and `npm ls -g` find what the build installed globally.
    NPM_CONFIG_PREFIX: NPM_GLOBAL_PREFIX,
    // A CI step's script that appends to the runner's files (`echo x >> "$GITHUB_STEP_SUMMARY"`)
    // would fail on the empty name; scratch files in /tmp take the lines instead.
    GITHUB_OUTPUT: '/tmp/github-output',
    GITHUB_ENV: '/tmp/github-env',
    GITHUB_PATH: '/tmp/github-path',
    GITHUB_STEP_SUMMARY: '/tmp/github-step-summary',
  };
  const merged = { ...base, ...extra };
  return Object.entries(merged).map(([key, value]) => `${key}=${value}`);
}
