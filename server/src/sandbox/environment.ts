/**
 * The environment a sandbox process sees, built only from this allowlist and explicit values:
 * never from the server's own `process.env` (which holds model keys and push tokens).
 */
export const SANDBOX_HOME = '/home/dockhand';
/** PATH without toolchains; a snapshot's mounted toolchains go in front of it (driver). */
export const SANDBOX_PATH = '/workspace/node_modules/.bin:/workspace/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

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
  };
  const merged = { ...base, ...extra };
  return Object.entries(merged).map(([key, value]) => `${key}=${value}`);
}
